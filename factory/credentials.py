"""Provider API keys for the ``api`` route, from a source the user names — and only there.

``--credentials FILE``: a JSON or TOML document, a regular file readable by its owner only
(mode 0600 or stricter: a key in a world-readable file is refused, not used).
``--credentials-env NAME``: the environment variable NAME holds the same document as JSON.
The document: ``{"anthropic_api_key": "…", "codex_api_key": "…"}``; nothing else, both
non-empty, printable ASCII. The caller's own ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` or
``CODEX_API_KEY`` are never read: a key reaches a CLI only because the user named where it is.

Values are never printed, logged or recorded: errors name the source and the field, and
:attr:`ApiKeys.source` is what a receipt may say (``file`` or ``env:NAME``).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from factory.errors import UsageError

FIELDS = ("anthropic_api_key", "codex_api_key")
_KEY = re.compile(r"[\x21-\x7e]{8,512}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class CredentialsRefused(UsageError):
    """The named credentials cannot be used (nothing ran)."""


CREDENTIALS_INVALID = CredentialsRefused.define(
    "credentials-invalid",
    'give {"anthropic_api_key": "…", "codex_api_key": "…"} (JSON, or TOML in a file)',
)
CREDENTIALS_UNREADABLE = CredentialsRefused.define(
    "credentials-unreadable", "name a regular file readable by you only (chmod 600 FILE)"
)
CREDENTIALS_EXPOSED = CredentialsRefused.define(
    "credentials-exposed", "make the file private first: chmod 600 FILE (then rotate the keys)"
)
CREDENTIALS_ENV_MISSING = CredentialsRefused.define(
    "credentials-env-missing", "export the variable you named (a JSON document) and rerun"
)


@dataclass(frozen=True, slots=True)
class ApiKeys:
    anthropic_api_key: str = field(repr=False)
    codex_api_key: str = field(repr=False)
    source: str


def _parse(data: bytes, source: str, toml_ok: bool) -> ApiKeys:
    try:
        text = data.decode("utf-8")
        value = json.loads(text) if not toml_ok or text.lstrip().startswith("{") else None
        if value is None:
            value = tomllib.loads(text)
    except (UnicodeDecodeError, ValueError, tomllib.TOMLDecodeError, RecursionError):
        raise CREDENTIALS_INVALID(
            f"{source} is not a JSON{' or TOML' if toml_ok else ''} document"
        ) from None
    if not isinstance(value, dict) or set(value) != set(FIELDS):
        raise CREDENTIALS_INVALID(f"{source} must hold exactly {', '.join(FIELDS)}")
    for name in FIELDS:
        if not isinstance(value[name], str) or not _KEY.fullmatch(value[name]):
            raise CREDENTIALS_INVALID(f"{source}: {name} is not a key (8-512 printable ASCII)")
    return ApiKeys(value[FIELDS[0]], value[FIELDS[1]], source)


def from_file(path: Path) -> ApiKeys:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CREDENTIALS_UNREADABLE(f"--credentials: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CREDENTIALS_UNREADABLE("--credentials is not a regular file")
        if st.st_mode & 0o077:
            raise CREDENTIALS_EXPOSED(
                f"--credentials is readable by others (mode {st.st_mode & 0o777:o})"
            )
        data = os.read(fd, 65536)
    finally:
        os.close(fd)
    return _parse(data, "file", toml_ok=True)


def from_env(name: str, environ: Mapping[str, str]) -> ApiKeys:
    if not _ENV_NAME.fullmatch(name):
        raise CREDENTIALS_INVALID("--credentials-env takes a variable name")
    if name not in environ:
        raise CREDENTIALS_ENV_MISSING(f"the variable {name} is not set")
    return _parse(environ[name].encode("utf-8"), f"env:{name}", toml_ok=False)


def load(file: Path | None, env_name: str | None, environ: Mapping[str, str]) -> ApiKeys | None:
    """The keys from the one source named, or None when none was (subscription route)."""
    if file is not None and env_name is not None:
        raise CREDENTIALS_INVALID("name one source: --credentials or --credentials-env")
    if file is not None:
        return from_file(file)
    if env_name is not None:
        return from_env(env_name, environ)
    return None

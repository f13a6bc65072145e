"""Read one ``factory.toml`` into checked values, or refuse it with a typed error (exit 2).

Every refusal names the file and, where there is one, the key — never a value: a value
may be a secret pasted by mistake, and a repository's file may be hostile. Messages pass
through the display sanitiser when printed (:meth:`factory.errors.FactoryError.shown`).

What is refused:

* a file that is not a regular file (a folder, a FIFO, a device) or a repository file
  that is a symbolic link — opened without blocking and judged by ``fstat``, so a FIFO
  never hangs the command; a file over 1 MiB;
* bytes that are not UTF-8, text that is not TOML;
* a key that looks like a secret (its name, or its value: PEM material, a known token
  shape), at any depth, before anything else is judged;
* an unknown table or key, a value of the wrong type;
* from a repository's file, a key only the user's file may set, or a cap raised above
  its built-in default.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from factory.config.table import BY_KEY, SECTIONS, TABLE, Binding
from factory.errors import UsageError

Role = Literal["repository", "user"]
MAX_BYTES = 1 << 20

_NEXT = "fix or remove the file named (see 'factory config --help')"
CONFIG_NOT_REGULAR = UsageError.define("config-not-regular", _NEXT)
CONFIG_UNREADABLE = UsageError.define("config-unreadable", _NEXT)
CONFIG_TOO_LARGE = UsageError.define("config-too-large", _NEXT)
CONFIG_NOT_UTF8 = UsageError.define("config-not-utf8", _NEXT)
CONFIG_INVALID_TOML = UsageError.define("config-invalid-toml", _NEXT)
CONFIG_UNKNOWN_KEY = UsageError.define(
    "config-unknown-key", "use a key 'factory config show' lists, or remove it"
)
CONFIG_WRONG_TYPE = UsageError.define("config-wrong-type", _NEXT)
CONFIG_SECRET = UsageError.define(
    "config-secret-refused",
    "remove it from the file: factory never reads secrets from factory.toml (pass key "
    "files by path; API keys through --credentials or --credentials-env)",
)
CONFIG_USER_ONLY = UsageError.define(
    "config-key-user-only",
    "a repository's factory.toml may not set it: put it in your own config file or pass the flag",
)
CONFIG_ABOVE_CEILING = UsageError.define(
    "config-repository-raises-cap",
    "a repository's factory.toml may only lower this cap: raise it with the flag or your "
    "own config file",
)

_SECRET_NAME = re.compile(
    r"token|passw|passphrase|api[-_]?key|secret|credential|private[-_]?key(?![-_]?(file|path))",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"-----BEGIN |\A(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-|xox[abprs]-|AKIA[0-9A-Z]{12})"
    r"|\AeyJ[\w-]+\.[\w-]+\.|\A(?i:bearer|basic|token)\s+\S|\AAIza[\w-]{30}"
)


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One file that was read: where, whose, and its values by key (``section.name``)."""

    path: Path
    role: Role
    values: dict[str, Any]


def read(path: Path, role: Role) -> ConfigFile | None:
    """The checked values of the file at ``path``; ``None`` when there is no such file."""
    data = _read_bytes(path, role)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CONFIG_NOT_UTF8(f"{path}: line {line} is not valid UTF-8") from None
    if text.startswith("\ufeff"):
        raise CONFIG_INVALID_TOML(
            f"{path}: starts with a UTF-8 byte-order mark (BOM), which TOML does not allow; "
            "save the file as UTF-8 without BOM"
        )
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CONFIG_INVALID_TOML(f"{path}: {_toml_problem(text, exc)}") from None
    _refuse_secrets(path, document, ())
    values = _checked(path, document)
    if role == "repository":
        _repository_may_set(path, values)
    return ConfigFile(path, role, _resolved_paths(path, values))


def _toml_problem(text: str, exc: tomllib.TOMLDecodeError) -> str:
    """tomllib's message, with the key named when it only says "Cannot overwrite a value"."""
    found = re.search(r"at line (\d+), column \d+", str(exc))
    if found is None or not str(exc).startswith("Cannot overwrite a value"):
        return f"not valid TOML ({exc})"
    line = int(found.group(1))
    lines = text.splitlines()
    key = lines[line - 1].split("=", 1)[0].strip() if line <= len(lines) else ""
    if not key or _SECRET_VALUE.search(key) or _SECRET_NAME.search(key):
        return f"line {line}: a key is given twice (a key may appear once in a table)"
    from factory.display import inert

    return f"line {line}: key {inert(key)} is given twice (a key may appear once in a table)"


def _read_bytes(path: Path, role: Role) -> bytes | None:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if role == "repository":
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None  # a parent is a file: there is no such config file
    except OSError as exc:
        if role == "repository" and path.is_symlink():
            raise CONFIG_NOT_REGULAR(f"{path} is a symbolic link") from None
        raise CONFIG_UNREADABLE(f"{path} cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CONFIG_NOT_REGULAR(f"{path} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise CONFIG_TOO_LARGE(f"{path} is larger than {MAX_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CONFIG_UNREADABLE(f"{path} cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise CONFIG_TOO_LARGE(f"{path} is larger than {MAX_BYTES} bytes")
    return data


def _refuse_secrets(path: Path, value: Any, where: tuple[str, ...]) -> None:
    """Refuse a secret-looking key or value anywhere in the document, naming only the key."""
    if isinstance(value, dict):
        for name, inner in value.items():
            key = (*where, name)
            if _SECRET_VALUE.search(name):  # the name itself is the secret: never shown
                table = _dotted(where) if where else "the top level"
                raise CONFIG_SECRET(f"{path}: a key name in {table} looks like a secret")
            if _SECRET_NAME.search(name):
                raise CONFIG_SECRET(f"{path}: key {_dotted(key)} looks like a secret")
            _refuse_secrets(path, inner, key)
    elif isinstance(value, list):
        for inner in value:
            _refuse_secrets(path, inner, where)
    elif isinstance(value, str) and _SECRET_VALUE.search(value):
        raise CONFIG_SECRET(f"{path}: the value of {_dotted(where)} looks like a secret")


def _dotted(key: tuple[str, ...]) -> str:
    from factory.display import inert

    return inert(".".join(key), limit=120)


def _checked(path: Path, document: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for section, table in document.items():
        if section not in SECTIONS:
            raise CONFIG_UNKNOWN_KEY(f"{path}: unknown table {_dotted((section,))}")
        if not isinstance(table, dict):
            raise CONFIG_WRONG_TYPE(f"{path}: {_dotted((section,))} must be a table")
        for name, value in table.items():
            binding = BY_KEY.get(f"{section}.{name}")
            if binding is None:
                raise CONFIG_UNKNOWN_KEY(f"{path}: unknown key {_dotted((section, name))}")
            values[binding.key] = _typed(path, binding, value)
    return values


_EXPECTED = {
    "str": "a string",
    "path": "a string (a path)",
    "int": "an integer",
    "float": "a finite number",
    "usd": 'a number of US dollars (2.5 or "2.50")',
    "argv": "a non-empty list of strings (program, then arguments)",
}


def _typed(path: Path, binding: Binding, value: Any) -> Any:
    """``value`` as the dest expects it, or ``config-wrong-type`` naming the key."""
    kind = binding.kind
    if kind in ("str", "path") and isinstance(value, str):
        return value
    if kind == "int" and type(value) is int:
        return value
    if kind == "float" and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if kind == "usd" and type(value) in (int, float, str):
        return value if isinstance(value, str) else _dollars(value)
    if kind == "argv" and isinstance(value, list) and value and all(map(_word, value)):
        return list(value)
    raise CONFIG_WRONG_TYPE(
        f"{path}: {binding.key} must be {_EXPECTED[kind]}, not {_toml_type(value)}"
    )


def _word(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _dollars(number: float) -> str:
    text = format(Decimal(str(number)).normalize(), "f")
    return text


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    for kind, name in names.items():
        if type(value) is kind:
            return name
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _repository_may_set(path: Path, values: dict[str, Any]) -> None:
    for key, value in values.items():
        binding = BY_KEY[key]
        if not binding.repository:
            raise CONFIG_USER_ONLY(f"{path}: {key} may only come from your own config file")
        if binding.ceiling is not None and _above(value, binding.ceiling):
            raise CONFIG_ABOVE_CEILING(f"{path}: {key} is above the built-in {binding.ceiling}")


def above_users(repo: ConfigFile, user: ConfigFile) -> None:
    """A repository's file may only tighten a limit your own file sets (turns, spend,
    timeouts, deadlines): ``config-repository-raises-cap`` when it loosens one."""
    for key, value in repo.values.items():
        mine = user.values.get(key)
        if mine is not None and BY_KEY[key].capped and _above(value, mine):
            raise CONFIG_ABOVE_CEILING(
                f"{repo.path}: {key} is above your own {mine} in {user.path}"
            )


def _above(value: Any, ceiling: Any) -> bool:
    if isinstance(ceiling, (int, float)) and not isinstance(ceiling, bool):
        return isinstance(value, (int, float)) and value > ceiling
    try:
        return Decimal(str(value)) > Decimal(ceiling)
    except InvalidOperation:
        return False  # not a number: the model-choice check refuses it by its own rule


def _resolved_paths(path: Path, values: dict[str, Any]) -> dict[str, Any]:
    """Path values made absolute: ``~`` expanded, relative ones against the file's folder."""
    folder = path.parent
    out = dict(values)
    for binding in TABLE:
        if binding.kind == "path" and binding.key in out:
            out[binding.key] = str(folder / Path(out[binding.key]).expanduser())
    return out

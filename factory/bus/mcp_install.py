"""``factory bus mcp-config --install``: the factory server in the client's own configuration
file, idempotently (issue 28).

Appending the printed table with ``>>`` broke Codex on a second run (a repeated
``[mcp_servers.factory]`` is a "duplicate key") and wrote invalid TOML after a file
without a final newline. Here the file is parsed and edited (:mod:`factory.bus.mcp_edit`):

* which file: Codex reads ``$CODEX_HOME/config.toml`` (``~/.codex/config.toml`` without
  ``CODEX_HOME``); Claude Code keeps its user-scope servers in ``~/.claude.json``
  (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), the file the pinned
  ``claude mcp add --scope user`` writes (observed). A symlink is followed: its target is
  edited, the link kept.
* a second run with the same flags finds the server as it would write it and writes
  nothing; a file that does not parse, is not a regular file or belongs to another user
  (the replacing rename would make it this user's: ``sudo`` keeping ``HOME``) is refused
  (exit 2) and left untouched;
* the write is :func:`factory.fsio.atomic_replace` (a reader sees the old or the new file),
  with the file's own mode; a new file gets 0600 (a missing ``~/.codex`` folder is made,
  0700, one level only).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factory.bus.mcp_config import Client, claude_entry, server_command
from factory.bus.mcp_edit import CLIENT_CONFIG_INVALID, install_json, install_toml
from factory.errors import Refused
from factory.fsio import atomic_replace

CLIENT_CONFIG_UNUSABLE = Refused.define(
    "client-config-unusable",
    "the file was not changed: make it a regular file you can read and write, in an "
    "existing folder, and run again",
)
NEW_FILE_MODE = 0o600


def config_path(client: Client, environ: Mapping[str, str]) -> Path:
    """The configuration file ``client`` reads for user-wide MCP servers."""
    home = environ.get("HOME") or os.path.expanduser("~")
    if client == "codex":
        folder = environ.get("CODEX_HOME") or os.path.join(home, ".codex")
        return Path(os.path.abspath(folder)) / "config.toml"
    folder = environ.get("CLAUDE_CONFIG_DIR") or home
    return Path(os.path.abspath(folder)) / ".claude.json"


def read_config(path: Path) -> tuple[str, int | None]:
    """The file's text and mode; ``("", None)`` when it does not exist.

    Raises:
        Refused: ``client-config-unusable`` (not a regular file, another user's,
            unreadable) or ``client-config-invalid`` (not UTF-8).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "", None
    except OSError as exc:
        raise CLIENT_CONFIG_UNUSABLE(f"cannot open {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CLIENT_CONFIG_UNUSABLE(f"{path} is not a regular file")
        if info.st_uid != os.geteuid():  # the rename would hand it to this user (sudo)
            raise CLIENT_CONFIG_UNUSABLE(f"{path} belongs to another user (uid {info.st_uid})")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError as exc:
        raise CLIENT_CONFIG_UNUSABLE(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8"), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError:
        raise CLIENT_CONFIG_INVALID(f"{path} is not UTF-8 text") from None


def write_config(path: Path, text: str, mode: int | None) -> None:
    """Replace (or create) ``path`` atomically with ``text``, keeping ``mode``.

    Raises:
        Refused: ``client-config-unusable``: the folder cannot be made or written.
    """
    try:
        if mode is None and not path.parent.is_dir():
            os.mkdir(path.parent, 0o700)
        keep = NEW_FILE_MODE if mode is None else mode
        atomic_replace(path, text.encode("utf-8"), mode=keep, exact_mode=True)
    except OSError as exc:
        raise CLIENT_CONFIG_UNUSABLE(f"cannot write {path}: {exc.strerror}") from None


def edited(client: Client, text: str, data_dir: Path, program: list[str] | None, where: str) -> str:
    """``text`` with the factory server for ``data_dir`` installed (``text`` itself when it
    is there already)."""
    if client == "codex":
        command, args = server_command(data_dir, program)
        return install_toml(text, {"command": command, "args": args}, where)
    entry: dict[str, Any] = claude_entry(data_dir, program)
    defaults = {"env": entry.pop("env")}
    return install_json(text, entry, defaults, where)


def install(
    client: Client,
    data_dir: Path,
    environ: Mapping[str, str],
    *,
    program: list[str] | None = None,
) -> str:
    """Install the factory server into ``client``'s configuration file; the line that
    says what changed and where."""
    named = config_path(client, environ)
    target = Path(os.path.realpath(named))
    where = str(named) if target == named else f"{named} (-> {target})"
    text, mode = read_config(target)
    after = edited(client, text, data_dir, program, where)
    if after == text:
        return f"already installed; nothing changed: {where}"
    write_config(target, after, mode)
    done = "created" if mode is None else "updated"
    return f"installed the factory server ({client}); {done}: {where}"

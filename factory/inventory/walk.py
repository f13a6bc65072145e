"""Walk a tree and hash its regular files for the inventory recipe (SPEC F-6).

The walk refuses, by relative path and without opening them, symlinks (to a file, to a
folder, dangling, looping), FIFOs, sockets and devices; and names that are not valid UTF-8
or contain LF. Files are opened ``O_NOFOLLOW|O_NONBLOCK`` and re-checked with ``fstat``,
so an entry swapped for a FIFO or symlink after the listing is still refused, never hung on.
Files are hashed in chunks and never read whole.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from factory.inventory.recipe import EXCLUDED_DIRECTORY_NAMES, InventoryRefused, Row

CHUNK = 1 << 20  # bytes per read
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _checked_name(rel: str) -> str:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InventoryRefused(
            f"{shown}: file name is not valid UTF-8; rename it", code="name-not-utf8"
        ) from None
    if "\n" in rel:
        raise InventoryRefused(
            f"{rel!r}: file name contains LF, which the recipe cannot represent; rename it",
            code="name-contains-lf",
        )
    return rel


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "non-regular entry"


def list_files(root: Path) -> list[tuple[str, str]]:
    """Every regular file under ``root`` as ``(recipe_path, absolute_path)``.

    Raises:
        InventoryRefused: a non-regular entry or an unrepresentable name (named).
    """
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, str]] = [(os.fspath(root), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except PermissionError:
            raise InventoryRefused(
                f"{prefix or '.'}: folder is not readable", code="unreadable"
            ) from None
        for entry in entries:
            rel = _checked_name(prefix + entry.name)
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in EXCLUDED_DIRECTORY_NAMES:
                    stack.append((entry.path, rel + "/"))
            elif entry.is_file(follow_symlinks=False):
                out.append((rel, entry.path))
            else:
                kind = _kind(entry.stat(follow_symlinks=False).st_mode)
                raise InventoryRefused(
                    f"{rel}: {kind} refused; the recipe hashes regular files only and never "
                    "skips an entry",
                    code=f"{kind.lower().replace(' ', '-')}-refused",
                )
    return out


def hash_file(rel: str, path: str) -> Row:
    """Hash one regular file in chunks. Refuses a file that is no longer regular."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except PermissionError:
        raise InventoryRefused(f"{rel}: file is not readable", code="unreadable") from None
    except OSError as exc:
        raise InventoryRefused(f"{rel}: cannot open ({exc.strerror})", code="unreadable") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InventoryRefused(f"{rel}: {_kind(mode)} refused", code="non-regular-refused")
        h = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
    except PermissionError:
        raise InventoryRefused(f"{rel}: file is not readable", code="unreadable") from None
    finally:
        os.close(fd)
    return Row(rel, size, h.hexdigest())


def scan(root: Path) -> list[Row]:
    """List and hash every regular file under ``root`` (see :func:`list_files`)."""
    return [hash_file(rel, path) for rel, path in list_files(root)]

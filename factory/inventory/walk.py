"""List the files of a tree for the inventory recipe, refusing what it cannot represent (F-6).

The listing never opens a file: entry kinds come from ``readdir``'s ``d_type`` (an
``lstat`` only where the filesystem does not report it), so a FIFO is refused without
being opened and a symlink is refused without being followed. Refused are symlinks (to a
file, to a folder, dangling, looping), FIFOs, sockets, devices, names that are not valid
UTF-8 and names containing LF, plus folders that cannot be listed.

Every refusal in the tree is collected and the one whose path sorts first (ordinal) is
reported, so the message does not depend on ``readdir`` order.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Code
from factory.inventory import recipe as r
from factory.inventory.recipe import EXCLUDED_DIRECTORY_NAMES, InventoryRefused, ordinal_key


@dataclass(frozen=True, slots=True)
class Problem:
    """One refused entry: recipe path (may hold surrogate escapes), code, what happened."""

    path: str
    code: Code[InventoryRefused]
    message: str


def shown(rel: str) -> str:
    """A path fit for a one-line message: undecodable bytes as ``\\xNN``, LF as ``\\n``."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.replace("\n", "\\n")


def kind_of(mode: int) -> str:
    """Human name of a non-regular file type, also the stem of its refusal code."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "non-regular"


_KIND_CODES = {
    "symlink": r.SYMLINK_REFUSED,
    "fifo": r.FIFO_REFUSED,
    "socket": r.SOCKET_REFUSED,
    "device": r.DEVICE_REFUSED,
    "non-regular": r.NON_REGULAR_REFUSED,
}


def non_regular(rel: str, kind: str) -> Problem:
    return Problem(
        rel,
        _KIND_CODES[kind],
        f"{shown(rel)}: {kind} refused; the recipe hashes regular files only and never "
        "skips an entry",
    )


def _name_problem(rel: str) -> Problem | None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return Problem(rel, r.NAME_NOT_UTF8, f"{shown(rel)}: file name is not valid UTF-8")
    if "\n" in rel:
        return Problem(
            rel,
            r.NAME_CONTAINS_LF,
            f"{shown(rel)}: file name contains LF, which a manifest line cannot hold",
        )
    return None


def raise_first(problems: list[Problem]) -> None:
    """Raise the ordinal-first problem (if any) as :class:`InventoryRefused`."""
    if not problems:
        return
    first = min(problems, key=lambda p: ordinal_key(p.path))
    more = len(problems) - 1
    suffix = f" ({more} more refused entr{'y' if more == 1 else 'ies'})" if more else ""
    raise first.code(first.message + suffix)


def list_files(root: Path) -> list[str]:
    """Every regular file under ``root`` as a recipe path (``/``-separated), listing order.

    Folders named ``.git`` or ``node_modules`` are skipped whole; a *file* with either
    name is listed.

    Raises:
        InventoryRefused: a refused entry or name (the ordinal-first of all of them).
    """
    rels: list[str] = []
    problems: list[Problem] = []
    stack: list[tuple[str, str]] = [(os.fspath(root), "")]
    excluded = EXCLUDED_DIRECTORY_NAMES
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            where = prefix[:-1] or "."
            problems.append(
                Problem(
                    where,
                    r.UNREADABLE,
                    f"{shown(where)}: folder cannot be listed ({exc.strerror})",
                )
            )
            continue
        for entry in entries:
            name = entry.name
            rel = prefix + name
            if not name.isascii() or "\n" in name:
                problem = _name_problem(rel)
                if problem is not None:
                    problems.append(problem)
                    continue
            if entry.is_dir(follow_symlinks=False):
                if name not in excluded:
                    stack.append((entry.path, rel + "/"))
            elif entry.is_file(follow_symlinks=False):
                rels.append(rel)
            else:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    mode = 0  # vanished while listing: still not a regular file
                problems.append(non_regular(rel, kind_of(mode)))
    raise_first(problems)
    return rels

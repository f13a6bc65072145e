"""Bind the whole worktree tree and the git control files around a review (SPEC A-5).

:func:`bind_tree` records every entry under the worktree except its top-level ``.git``:
ignored files and ``node_modules`` included, folders by mode, regular files by mode, size
and SHA-256, symlinks by their target bytes (never followed), anything else by kind and
mode (never opened). Entries are keyed by their raw relative path bytes and digested in
byte order — locale-independent and defined for names that are not UTF-8.

:func:`bind_control` does the same for the git directories' mutable control files: ``HEAD``,
``index``, ``config``, ``config.worktree``, ``hooks/``, ``info/``, ``refs/``,
``packed-refs``, ``commondir``, the worktree's ``gitdir`` back-pointer and its ``.git`` file.
An absent control file is bound as absent, so creating one is a change too.

A re-bind may pass the previous binding: a regular file whose (device, inode, size, mode,
mtime_ns, ctime_ns) are all unchanged keeps its previous digest. Any write changes the
ctime, which user space cannot set back, so a skipped re-hash cannot hide a write.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from factory.gitio.worktree import Worktree

TREE_TAG = b"factory.worktree-tree/1"
CONTROL_TAG = b"factory.git-control/1"
CHUNK = 1 << 20
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """One bound entry. ``kind``: f file, d folder, l symlink, o other, a absent."""

    kind: str
    mode: int
    size: int
    content: str  # file: sha256 hex; symlink: target bytes as hex; else ""
    stamp: tuple[int, int, int, int]  # (dev, ino, mtime_ns, ctime_ns): cache key only

    def record(self) -> bytes:
        return f"{self.kind}\0{self.mode:o}\0{self.size}\0{self.content}\0".encode("ascii")


@dataclass(frozen=True, slots=True)
class Bound:
    """A binding: entries by raw path (or label) bytes, and their digest ``sha256:<hex>``."""

    entries: dict[bytes, Entry]
    digest: str


def _hash_file(path: bytes, st: os.stat_result) -> tuple[str, os.stat_result]:
    fd = os.open(path, _OPEN)
    try:
        fst = os.fstat(fd)
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest(), fst


def _entry(path: bytes, st: os.stat_result, previous: Entry | None) -> Entry:
    mode = stat.S_IMODE(st.st_mode)
    stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    if stat.S_ISREG(st.st_mode):
        if (
            previous is not None
            and previous.kind == "f"
            and previous.stamp == stamp
            and previous.size == st.st_size
            and previous.mode == mode
        ):
            return previous
        try:
            content, fst = _hash_file(path, st)
        except OSError:
            # Swapped for a symlink/FIFO or removed between listing and opening: bind
            # what is there now, as a kind that will never compare equal to a file.
            return Entry("o", mode, st.st_size, "", stamp)
        fstamp = (fst.st_dev, fst.st_ino, fst.st_mtime_ns, fst.st_ctime_ns)
        return Entry("f", stat.S_IMODE(fst.st_mode), fst.st_size, content, fstamp)
    if stat.S_ISDIR(st.st_mode):
        return Entry("d", mode, 0, "", stamp)
    if stat.S_ISLNK(st.st_mode):
        return Entry("l", mode, 0, os.readlink(path).hex(), stamp)
    return Entry("o", stat.S_IFMT(st.st_mode) | mode, 0, "", stamp)


def _walk_into(
    out: dict[bytes, Entry],
    top: bytes,
    label: bytes,
    previous: dict[bytes, Entry],
    skip_top: frozenset[bytes] = frozenset(),
) -> None:
    stack: list[tuple[bytes, bytes, bool]] = [(top, label, True)]
    while stack:
        folder, prefix, is_top = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for de in it:
                name = de.name
                if is_top and name in skip_top:
                    continue
                rel = prefix + name if not prefix else prefix + b"/" + name
                try:
                    st = de.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                e = _entry(de.path, st, previous.get(rel))
                out[rel] = e
                if e.kind == "d":
                    stack.append((de.path, rel, False))


def _digest(tag: bytes, entries: dict[bytes, Entry]) -> str:
    h = hashlib.sha256(tag + b"\0")
    for rel in sorted(entries):
        h.update(rel + b"\0" + entries[rel].record())
    return "sha256:" + h.hexdigest()


def bind_tree(root: Path, previous: Bound | None = None) -> Bound:
    """Bind every entry under ``root`` except its top-level ``.git`` (SPEC A-5)."""
    entries: dict[bytes, Entry] = {}
    _walk_into(
        entries, os.fsencode(root), b"", previous.entries if previous else {}, frozenset({b".git"})
    )
    return Bound(entries, _digest(TREE_TAG, entries))


_GIT_DIR_ITEMS = ("HEAD", "index", "gitdir", "commondir", "config.worktree", "refs", "logs/HEAD")
_COMMON_ITEMS = ("HEAD", "config", "config.worktree", "hooks", "info", "refs", "packed-refs")


def control_items(wt: Worktree) -> list[tuple[bytes, Path]]:
    """The control files bound around a review, as ``(label, path)``."""
    items: list[tuple[bytes, Path]] = [(b"worktree/.git", wt.dot_git)]
    items += [(b"git-dir/" + n.encode(), wt.git_dir / n) for n in _GIT_DIR_ITEMS]
    items += [(b"common-dir/" + n.encode(), wt.common_dir / n) for n in _COMMON_ITEMS]
    return items


def bind_control(wt: Worktree, previous: Bound | None = None) -> Bound:
    """Bind the git directories' mutable control files (SPEC A-5)."""
    prev = previous.entries if previous else {}
    entries: dict[bytes, Entry] = {}
    for label, path in control_items(wt):
        p = os.fsencode(path)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            entries[label] = Entry("a", 0, 0, "", (0, 0, 0, 0))
            continue
        e = _entry(p, st, prev.get(label))
        entries[label] = e
        if e.kind == "d":
            _walk_into(entries, p, label, prev)
    return Bound(entries, _digest(CONTROL_TAG, entries))


def changed_paths(before: Bound, after: Bound) -> list[bytes]:
    """Paths (or labels) added, removed or changed in kind, mode, size or content."""
    out = [
        rel
        for rel, e in before.entries.items()
        if (o := after.entries.get(rel)) is None or o.record() != e.record()
    ]
    out += [rel for rel in after.entries if rel not in before.entries]
    return sorted(out)

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
mtime_ns, ctime_ns) are all unchanged, and whose ctime is well before the previous binding
began, keeps its previous digest. Any write changes the ctime, which user space cannot set
back, so a skipped re-hash cannot hide a write; files changed within
:data:`RACY_MARGIN_NS` of the previous binding are always re-hashed (coarse timestamps).

Folders are opened once (``O_NOFOLLOW``) and their entries reached by ``dir_fd``, so a
folder swapped for a symlink mid-walk is never followed and paths are not re-resolved.
"""

from __future__ import annotations

import os
import stat
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from factory.canonical import tagged_sha256
from factory.filehash import hasher
from factory.gitio.worktree import Worktree

TREE_TAG = "factory.worktree-tree/1"
CONTROL_TAG = "factory.git-control/1"


@dataclass(frozen=True, slots=True)
class Entry:
    """One bound entry. ``kind``: f file, d folder, l symlink, o other, a absent."""

    kind: str
    mode: int
    size: int
    content: str  # file: sha256 hex; symlink: target bytes as hex; else ""
    stamp: tuple[int, int, int, int]  # (dev, ino, mtime_ns, ctime_ns): cache key only
    rec: bytes  # the bytes hashed for this entry (see :func:`entry`)

    def record(self) -> bytes:
        return self.rec


def entry(kind: str, mode: int, size: int, content: str, stamp: tuple[int, int, int, int]) -> Entry:
    """An :class:`Entry` with its hashed record: kind, octal mode, size, content, each + NUL."""
    rec = b"%s\0%o\0%d\0%s\0" % (kind.encode(), mode, size, content.encode())
    return Entry(kind, mode, size, content, stamp, rec)


ABSENT = entry("a", 0, 0, "", (0, 0, 0, 0))


@dataclass(frozen=True, slots=True)
class Bound:
    """A binding: entries by raw path (or label) bytes, and their digest ``sha256:<hex>``.

    ``started_ns`` is the wall clock (ns) when binding began: a re-bind trusts a cached
    file digest only for files whose ctime is older than that by :data:`RACY_MARGIN_NS`.
    """

    entries: dict[bytes, Entry]
    digest: str
    started_ns: int = 0


# Kernel file timestamps come from a coarse clock (one tick can be several ms), so a write
# in the same tick as our read could leave (size, mtime, ctime) unchanged. Files touched
# this recently before binding began are re-hashed on re-bind instead of trusted — the
# same idea as git's racy-clean check.
RACY_MARGIN_NS = 2_000_000_000
WORKERS = 2  # threads; file opens and reads release the GIL


def _read_digest(dfd: int, name: bytes) -> str:
    """SHA-256 hex of the regular file ``name`` in folder ``dfd`` (the one hasher)."""
    return hasher().digest_at(name, dir_fd=dfd)[1]


def _entry_at(
    dfd: int, name: bytes, st: os.stat_result, previous: Entry | None, trust_before_ns: int
) -> Entry:
    mode = stat.S_IMODE(st.st_mode)
    stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    if stat.S_ISREG(st.st_mode):
        if (
            previous is not None
            and previous.kind == "f"
            and previous.stamp == stamp
            and previous.size == st.st_size
            and previous.mode == mode
            and st.st_ctime_ns < trust_before_ns
        ):
            return previous
        try:
            content = _read_digest(dfd, name)
        except OSError:
            # Swapped for a symlink/FIFO or removed between listing and opening: bind it
            # as a kind that never compares equal to a file.
            return entry("o", mode, st.st_size, "", stamp)
        return entry("f", mode, st.st_size, content, stamp)
    if stat.S_ISDIR(st.st_mode):
        return entry("d", mode, 0, "", stamp)
    if stat.S_ISLNK(st.st_mode):
        return entry("l", mode, 0, os.readlink(name, dir_fd=dfd).hex(), stamp)
    return entry("o", stat.S_IFMT(st.st_mode) | mode, 0, "", stamp)


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_Job = tuple[int, bytes]  # (open folder fd, relative path or label prefix)


def _bind_folder(
    job: _Job, previous: dict[bytes, Entry], trust_before_ns: int, skip: frozenset[bytes]
) -> tuple[list[tuple[bytes, Entry]], list[_Job]]:
    dfd, prefix = job
    found: list[tuple[bytes, Entry]] = []
    subfolders: list[_Job] = []
    try:
        for de in os.scandir(dfd):
            name = de.name.encode("utf-8", "surrogateescape")
            if not prefix and name in skip:
                continue
            rel = prefix + b"/" + name if prefix else name
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            e = _entry_at(dfd, name, st, previous.get(rel), trust_before_ns)
            found.append((rel, e))
            if e.kind == "d":
                try:
                    subfolders.append((os.open(name, _DIR_OPEN, dir_fd=dfd), rel))
                except OSError:
                    found[-1] = (rel, entry("o", e.mode, 0, "unreadable", e.stamp))
    finally:
        os.close(dfd)
    return found, subfolders


def _walk(
    top: bytes,
    label: bytes,
    previous: dict[bytes, Entry],
    trust_before_ns: int,
    skip: frozenset[bytes] = frozenset(),
) -> dict[bytes, Entry]:
    """Bind every entry below the folder ``top`` (not ``top`` itself), keyed under ``label``."""
    out: dict[bytes, Entry] = {}
    first = os.open(top, _DIR_OPEN)
    # A labelled walk (git control folders) is small: one thread. The worktree walk fans
    # out folder by folder over WORKERS threads, so syscalls of one overlap another.
    if label or WORKERS <= 1:
        stack: list[_Job] = [(first, label)]
        while stack:
            found, subs = _bind_folder(stack.pop(), previous, trust_before_ns, skip)
            out.update(found)
            stack.extend(subs)
        return out
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="factory-bind") as pool:
        pending = {pool.submit(_bind_folder, (first, b""), previous, trust_before_ns, skip)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                found, subs = fut.result()
                out.update(found)
                for job in subs:
                    pending.add(pool.submit(_bind_folder, job, previous, trust_before_ns, skip))
    return out


def _digest(tag: str, entries: dict[bytes, Entry]) -> str:
    doc = b"".join([rel + b"\0" + entries[rel].rec for rel in sorted(entries)])
    return tagged_sha256(tag, doc)


def _trust_before(previous: Bound | None) -> int:
    return previous.started_ns - RACY_MARGIN_NS if previous is not None else 0


def bind_tree(root: Path, previous: Bound | None = None) -> Bound:
    """Bind every entry under ``root`` except its top-level ``.git`` (SPEC A-5)."""
    started = time.time_ns()
    entries = _walk(
        os.fsencode(root),
        b"",
        previous.entries if previous else {},
        _trust_before(previous),
        frozenset({b".git"}),
    )
    return Bound(entries, _digest(TREE_TAG, entries), started)


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
    started = time.time_ns()
    prev = previous.entries if previous else {}
    trust = _trust_before(previous)
    entries: dict[bytes, Entry] = {}
    for label, path in control_items(wt):
        name = os.fsencode(path.name)
        try:
            parent = os.open(os.fsencode(path.parent), _DIR_OPEN)
        except OSError:
            entries[label] = ABSENT
            continue
        try:
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                entries[label] = ABSENT
                continue
            e = _entry_at(parent, name, st, prev.get(label), trust)
        finally:
            os.close(parent)
        entries[label] = e
        if e.kind == "d":
            entries.update(_walk(os.fsencode(path), label, prev, trust))
    return Bound(entries, _digest(CONTROL_TAG, entries), started)


def changed_paths(before: Bound, after: Bound) -> list[bytes]:
    """Paths (or labels) added, removed or changed in kind, mode, size or content."""
    out = [
        rel
        for rel, e in before.entries.items()
        if (o := after.entries.get(rel)) is None or o.record() != e.record()
    ]
    out += [rel for rel in after.entries if rel not in before.entries]
    return sorted(out)

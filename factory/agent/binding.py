"""Bind a whole folder tree by content, and the worktree around a review (SPEC A-5).

:func:`bind_tree` records every entry under the worktree except its top-level ``.git``:
ignored files and ``node_modules`` included, folders by mode, regular files by mode, size
and SHA-256, symlinks by their target bytes (never followed), anything else by kind and
mode (never opened). Entries are keyed by their raw relative path bytes and digested in
byte order — locale-independent and defined for names that are not UTF-8.

:func:`walk` is the walker both use, with a per-folder ``skip`` rule;
:mod:`factory.agent.control` binds the git directories with it, by exclusion.

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
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from factory.documents.canonical import tagged_sha256
from factory.filehash import hasher

TREE_TAG = "factory.worktree-tree/1"


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


def entry_at(
    dfd: int,
    name: bytes,
    st: os.stat_result,
    previous: Entry | None,
    trust_before_ns: int,
    by_stat_before_ns: int = 0,
) -> Entry:
    """The entry for ``name`` in the open folder ``dfd`` (``st``: its lstat).

    A regular file keeps ``previous`` under the stat-cache rule (module docstring); one
    whose ctime is older than ``by_stat_before_ns`` — and that ``previous`` did not bind
    by content — is bound by its stat identity (``stat:<dev>:<ino>:<mtime_ns>:<ctime_ns>``)
    instead of being read: any write changes the ctime, so a later binding finds another
    identity and the file differs.
    """
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
        # Stat identity only where the previous binding did not read this file's bytes: a
        # file bound by content is compared by content (else a file racy then, old now,
        # would look changed).
        by_content = previous is not None and not previous.content.startswith("stat:")
        if st.st_ctime_ns < by_stat_before_ns and not by_content:
            identity = "stat:{}:{}:{}:{}".format(*stamp)
            return entry("f", mode, st.st_size, identity, stamp)
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
# skip(prefix of a folder) -> None (keep every entry) or a test of an entry's name (True:
# leave it, and all below it, out). Asked once per folder, so most folders cost nothing.
NameTest = Callable[[bytes], bool]
Skip = Callable[[bytes], NameTest | None]


def _nothing(prefix: bytes) -> NameTest | None:
    return None


def _is_git(name: bytes) -> bool:
    return name == b".git"


def _top_git(prefix: bytes) -> NameTest | None:
    return None if prefix else _is_git


def _bind_folder(
    job: _Job, previous: dict[bytes, Entry], trust_before_ns: int, skip: Skip, by_stat: int
) -> tuple[list[tuple[bytes, Entry]], list[_Job]]:
    dfd, prefix = job
    found: list[tuple[bytes, Entry]] = []
    subfolders: list[_Job] = []
    leave_out = skip(prefix)
    sep = prefix + b"/" if prefix else b""
    cached = previous.get
    try:
        for text in os.listdir(dfd):
            name = text.encode("utf-8", "surrogateescape")
            if leave_out is not None and leave_out(name):
                continue
            rel = sep + name
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            prev = cached(rel)
            # The stat cache's common case, inlined (the rule is entry_at's).
            if (
                prev is not None
                and st.st_ctime_ns < trust_before_ns
                and prev.stamp == (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                and prev.kind == "f"
                and prev.size == st.st_size
                and prev.mode == stat.S_IMODE(st.st_mode)
                and stat.S_ISREG(st.st_mode)
            ):
                found.append((rel, prev))
                continue
            e = entry_at(dfd, name, st, prev, trust_before_ns, by_stat)
            found.append((rel, e))
            if e.kind == "d":
                try:
                    subfolders.append((os.open(name, _DIR_OPEN, dir_fd=dfd), rel))
                except OSError:
                    found[-1] = (rel, entry("o", e.mode, 0, "unreadable", e.stamp))
    finally:
        os.close(dfd)
    return found, subfolders


def walk(
    top: bytes,
    label: bytes,
    previous: dict[bytes, Entry],
    trust_before_ns: int,
    skip: Skip = _nothing,
    workers: int = WORKERS,
    by_stat_before_ns: int = 0,
) -> dict[bytes, Entry]:
    """Bind every entry below the folder ``top`` (not ``top`` itself), keyed under ``label``
    (``label/rel``, or ``rel`` when ``label`` is empty); ``skip`` leaves entries (and
    everything below them) out: see :data:`Skip`. With ``workers`` > 1 the walk fans out
    folder by folder over that many threads, so syscalls of one overlap another.
    ``by_stat_before_ns``: see :func:`entry_at`."""
    out: dict[bytes, Entry] = {}
    by_stat = by_stat_before_ns
    first = os.open(top, _DIR_OPEN)
    if workers <= 1:
        stack: list[_Job] = [(first, label)]
        while stack:
            found, subs = _bind_folder(stack.pop(), previous, trust_before_ns, skip, by_stat)
            out.update(found)
            stack.extend(subs)
        return out
    with ThreadPoolExecutor(workers, thread_name_prefix="factory-bind") as pool:
        args = (previous, trust_before_ns, skip, by_stat)
        pending = {pool.submit(_bind_folder, (first, label), *args)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                found, subs = fut.result()
                out.update(found)
                for job in subs:
                    pending.add(pool.submit(_bind_folder, job, *args))
    return out


def digest(tag: str, entries: dict[bytes, Entry]) -> str:
    """``sha256:<hex>`` over ``tag`` and every entry's path and record, in byte order."""
    doc = b"".join([rel + b"\0" + entries[rel].rec for rel in sorted(entries)])
    return tagged_sha256(tag, doc)


def trust_before(previous: Bound | None) -> int:
    """Cached digests are trusted for files whose ctime is older than this (ns)."""
    return previous.started_ns - RACY_MARGIN_NS if previous is not None else 0


def bind_tree(root: Path, previous: Bound | None = None) -> Bound:
    """Bind every entry under ``root`` except its top-level ``.git`` (SPEC A-5)."""
    started = time.time_ns()
    entries = walk(
        os.fsencode(root),
        b"",
        previous.entries if previous else {},
        trust_before(previous),
        _top_git,
    )
    return Bound(entries, digest(TREE_TAG, entries), started)


def changed_paths(
    before: Bound, after: Bound, ignore: Callable[[bytes], bool] | None = None
) -> list[bytes]:
    """Paths (or labels) added, removed or changed in kind, mode, size or content, in byte
    order; ``ignore(path)`` leaves a path out of the comparison."""
    out = [
        rel
        for rel, e in before.entries.items()
        if (o := after.entries.get(rel)) is None or o.record() != e.record()
    ]
    out += [rel for rel in after.entries if rel not in before.entries]
    return sorted(p for p in out if ignore is None or not ignore(p))

"""The raw bytes and lstat mode of worktree paths, as git objects would hold them (issue 8 §3).

:class:`RawReader` reads one relative path at a time without following any symlink and
without any conversion: a regular file's exact bytes (one pass computes both the git
object id of the blob and its SHA-256), a symlink's target bytes, and for anything else
only its kind (a FIFO, socket or device is never opened). The git mode comes from
``lstat``: ``100755`` when the owner may execute, else ``100644``; ``120000`` for a
symlink — whatever ``core.fileMode`` or ``core.symlinks`` say.

A path below a symlinked (or otherwise non-folder) parent is reported as ``below-link``:
the bytes there live outside the worktree's own folders.

:meth:`RawReader.walk` reads a whole worktree in one pass: it visits every folder git looks
into once, by descriptor, reads there the listed paths it meets (later :meth:`RawReader.read`
calls answer them from that walk) and notes the FIFOs, sockets and devices it finds, which
git's own listing skips. A listed path the walk never meets (deleted, below an ignored
folder, a symlink or a nested repository) is read alone, as before.

A reader may carry a :class:`StatCache` from an earlier read: a regular file whose
(device, inode, size, mode, mtime, ctime) are unchanged and whose ctime lies
:data:`RACY_MARGIN_NS` before the earlier read began keeps its earlier ids. Every write
changes the ctime, which user space cannot set back; a file touched within the margin is
always re-read (coarse kernel timestamps).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from factory.errors import Failure

CHUNK = 1 << 20
RACY_MARGIN_NS = 2_000_000_000
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FS_CODEC = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())  # os.fsencode's

Kind = Literal["file", "symlink", "dir", "special", "missing", "below-link"]
Stamp = tuple[int, int, int, int, int, int]


class RawChanged(Failure):
    """A file changed while it was being read (exit 4): something is still writing."""


CHANGED_DURING_SNAPSHOT = RawChanged.define(
    "candidate-changed-during-snapshot",
    "stop whatever still writes in the worktree and rerun",
    default=True,
)


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One path as found on disk. ``oid``/``sha256`` are ``""`` where there are no bytes.

    ``mode`` is git's octal string for files and symlinks (``""`` otherwise); ``size`` is
    the byte count of the file or the symlink target.
    """

    kind: Kind
    mode: str = ""
    oid: str = ""
    size: int = 0
    sha256: str = ""
    stamp: Stamp = (0, 0, 0, 0, 0, 0)

    @property
    def has_bytes(self) -> bool:
        return self.kind in ("file", "symlink")


@dataclass
class StatCache:
    """Entries of an earlier read, and when that read began (wall clock, ns)."""

    entries: dict[bytes, RawEntry] = field(default_factory=dict)
    started_ns: int = 0


def blob_id(data: bytes, object_format: str) -> str:
    """The git object id of a blob holding ``data`` (``sha1`` or ``sha256`` repositories)."""
    h = hashlib.new(object_format, b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def git_mode(st_mode: int) -> str:
    """git's mode for an lstat result (files and symlinks only)."""
    if stat.S_ISLNK(st_mode):
        return "120000"
    return "100755" if st_mode & stat.S_IXUSR else "100644"


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


class RawReader:
    """Reads paths below ``root`` (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        root: Path,
        object_format: str = "sha1",
        previous: StatCache | None = None,
        *,
        sha256: bool = True,
    ) -> None:
        self.root = os.fsencode(root)
        self.object_format = object_format
        self._sha256 = sha256  # False: blob ids only (``sha256`` stays "")
        self.cache = StatCache(started_ns=time.time_ns())
        self._previous = previous.entries if previous is not None else {}
        self._trust_before = previous.started_ns - RACY_MARGIN_NS if previous else 0
        self._folders: dict[bytes, Kind] = {b"": "dir"}
        self._walked: dict[bytes, RawEntry] = {}

    def _folder(self, rel: bytes) -> Kind:
        """``dir`` when every component of ``rel`` is a real folder."""
        known = self._folders.get(rel)
        if known is not None:
            return known
        parent, _, _ = rel.rpartition(b"/")
        kind = self._folder(parent)
        if kind == "dir":
            try:
                st = os.lstat(os.path.join(self.root, rel))
            except FileNotFoundError:
                kind = "missing"
            except NotADirectoryError:
                kind = "below-link"
            else:
                kind = "dir" if stat.S_ISDIR(st.st_mode) else "below-link"
        self._folders[rel] = kind
        return kind

    def read(self, rel: bytes, assume_oid: str | None = None) -> RawEntry:
        """The entry at ``rel`` (raw relative path bytes, ``/``-separated).

        ``assume_oid``: the caller knows the bytes of a regular file there are that blob
        unless its stat data changes (e.g. a checkout no conversion applied to); the file
        is then not read, and the entry is remembered for the next read's stat cache.
        A path :meth:`walk` met is answered from the walk (``assume_oid`` unused).
        """
        walked = self._walked.get(rel)
        if walked is not None:
            return walked
        parent = rel.rpartition(b"/")[0]
        folder = self._folders.get(parent) or self._folder(parent)
        if folder != "dir":
            return RawEntry(folder)
        full = self.root + b"/" + rel
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return RawEntry("missing")
        return self._entry(rel, full, st, assume_oid)

    def _entry(
        self,
        rel: bytes,
        name: bytes,
        st: os.stat_result,
        assume_oid: str | None = None,
        dir_fd: int | None = None,
    ) -> RawEntry:
        """The entry of ``rel`` from its lstat result; ``name`` reaches it from ``dir_fd``
        (the full path without one)."""
        if stat.S_ISREG(st.st_mode):
            stamp = _stamp(st)
            prev = self._previous.get(rel)
            if prev is not None and prev.stamp == stamp and st.st_ctime_ns < self._trust_before:
                entry = prev  # the stat cache's common case
            elif assume_oid is not None:
                entry = RawEntry("file", git_mode(st.st_mode), assume_oid, st.st_size, "", stamp)
            elif dir_fd is None:
                entry = self._read_file(name, stamp)
            else:
                entry = self._read_file(name, stamp, dir_fd=dir_fd)
        else:
            entry = self._classify(name, st, dir_fd)
        self.cache.entries[rel] = entry
        return entry

    def walk(self, wanted: Iterable[bytes], skip: Collection[bytes]) -> list[bytes]:
        """Visit the worktree's folders once, reading the ``wanted`` paths met there.

        Not entered: the top ``.git``, the folders in ``skip`` (ignored ones), and any
        other folder holding a ``.git`` entry (a nested repository or submodule), nor one
        that cannot be opened. Returns the FIFOs, sockets and devices found, ignored or
        not, in no particular order. A wanted path ending in ``/`` is never met.
        """
        children: dict[bytes, set[bytes]] = {}
        for path in wanted:
            parent, _, name = path.rpartition(b"/")
            children.setdefault(parent, set()).add(name)
        special: list[bytes] = []
        stack: list[bytes] = [b""]
        while stack:
            rel = stack.pop()
            try:  # O_NOFOLLOW below the top: a folder swapped for a symlink is not entered
                fd = os.open(self.root + b"/" + rel, _FOLDER | (os.O_NOFOLLOW if rel else 0))
            except OSError:
                continue
            try:
                stack += self._visit(rel, fd, children.get(rel, ()), skip, special)
            finally:
                os.close(fd)
        return special

    def _visit(
        self,
        rel: bytes,
        fd: int,
        wanted: Collection[bytes],  # names in this folder
        skip: Collection[bytes],
        special: list[bytes],
    ) -> list[bytes]:
        """One folder of :meth:`walk`: read its wanted entries, note its special files,
        and return its subfolders to enter."""
        with os.scandir(fd) as it:
            listing = list(it)
        if rel and any(de.name == ".git" for de in listing):
            return []  # a nested repository or submodule
        prefix = rel + b"/" if rel else b""
        folders: list[bytes] = []
        for de in listing:
            name = de.name.encode(*_FS_CODEC)  # a descriptor's listing names in str
            if not rel and name == b".git":
                continue
            path = prefix + name
            mode = self._met(path, name, fd) if name in wanted else None
            if mode is None:  # not wanted, or gone since the listing: its type as listed
                if de.is_dir(follow_symlinks=False):
                    mode = stat.S_IFDIR
                elif de.is_file(follow_symlinks=False) or de.is_symlink():
                    continue
                else:
                    mode = de.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                if path not in skip:
                    folders.append(path)
            elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                special.append(path)
        return folders

    def _met(self, path: bytes, name: bytes, fd: int) -> int | None:
        """Read a wanted entry the walk met (by ``name`` in the folder ``fd``); its lstat
        mode, or ``None`` when it is gone since the listing (it is then read alone)."""
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        self._walked[path] = self._entry(path, name, st, None, fd)
        return st.st_mode

    def _classify(self, full: bytes, st: os.stat_result, dir_fd: int | None = None) -> RawEntry:
        stamp = _stamp(st)
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(full, dir_fd=dir_fd)
            return RawEntry(
                "symlink",
                "120000",
                blob_id(target, self.object_format),
                len(target),
                hashlib.sha256(target).hexdigest(),
                stamp,
            )
        if stat.S_ISDIR(st.st_mode):
            return RawEntry("dir", stamp=stamp)
        return RawEntry("special", stamp=stamp)

    def _read_file(self, full: bytes, stamp: Stamp, *, dir_fd: int | None = None) -> RawEntry:
        for _ in range(3):
            try:
                fd = os.open(full, _OPEN, dir_fd=dir_fd)
            except OSError:
                return RawEntry("special", stamp=stamp)  # swapped since lstat
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    return RawEntry("special", stamp=stamp)
                oid = hashlib.new(self.object_format, b"blob %d\0" % st.st_size)
                sha = hashlib.sha256() if self._sha256 else None
                size = 0
                while chunk := os.read(fd, CHUNK):
                    oid.update(chunk)
                    if sha is not None:
                        sha.update(chunk)
                    size += len(chunk)
            finally:
                os.close(fd)
            if size == st.st_size:
                mode = git_mode(st.st_mode)
                digest = sha.hexdigest() if sha is not None else ""
                return RawEntry("file", mode, oid.hexdigest(), size, digest, _stamp(st))
        raise CHANGED_DURING_SNAPSHOT("a file kept changing while factory read it")


def read_worktree(
    root: Path,
    object_format: str,
    previous: StatCache | None,
    wanted: Iterable[bytes],
    skip: Collection[bytes],
) -> tuple[RawReader, list[bytes]]:
    """A reader that has walked the worktree once (:meth:`RawReader.walk`), and the FIFOs,
    sockets and devices the walk found (ignored or not)."""
    reader = RawReader(root, object_format, previous)
    return reader, reader.walk(wanted, skip)

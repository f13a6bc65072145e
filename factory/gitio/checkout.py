"""Check a commit's tree out into an empty folder from the raw blobs (issue 16).

``git checkout`` converts on the way out: smudge filters and ``process`` drivers (programs
the repository's configuration names), ``ident``, ``text``/``eol`` and
``working-tree-encoding`` — driven by ``.gitattributes`` in the tree *and* by
``$GIT_COMMON_DIR/info/attributes``, which no command-line option switches off. So the
factory writes the files itself:

1. ``git ls-tree -r -z --full-tree <commit>`` lists every entry (mode, object id, path);
   each path is checked the way ``git checkout`` checks it (no ``.git`` component in any
   spelling, no ``.``/``..``/empty component, no symlinked ``.gitmodules`` and friends).
2. ``git cat-file --batch`` streams every blob's *raw* bytes (no ``--filters``), and each
   file is created exclusively below folders opened by descriptor, never following a
   symlink; symlinks are created from their blob (the target), gitlinks as empty folders
   (an uninitialised submodule, as git leaves it).
3. Each entry's stat data goes into the index (:mod:`factory.gitio.index_file`), so git
   sees the worktree as clean without hashing anything again.

Every file and symlink gets the modification time of *one second before the checkout
started*. git's racy-clean check (an entry whose mtime is not older than the index file,
in whole seconds unless git was built with nanosecond times) would otherwise re-hash every
file written in the index's second, through the clean filter, on every ``git status``;
with the index strictly newer, stat data alone decides, and any later edit (mtime now)
differs from the recorded one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from factory.errors import Failure, Refused
from factory.gitio.index_file import IndexEntry, index_bytes
from factory.gitio.run import git_argv, git_env, run_git

CHUNK = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MODES = {b"100644": 0o100644, b"100755": 0o100755, b"120000": 0o120000, b"160000": 0o160000}
# Names git refuses to check out as symlinks (they would be read through the link).
_NO_SYMLINK = frozenset({b".gitmodules", b".gitattributes", b".gitignore", b".mailmap"})


class UnsafeTree(Refused):
    """The base tree holds a path git itself would refuse to check out (exit 2)."""


class CheckoutFailed(Failure):
    """Writing the worktree's files or index failed after creation began (exit 4)."""


BASE_TREE_UNSAFE = UnsafeTree.define(
    "base-tree-unsafe", "git refuses to check it out, and so does factory: choose another --base"
)
CHECKOUT_FAILED = CheckoutFailed.define(
    "worktree-checkout-failed", "the worktree stays as it is for inspection; fix the cause, rerun"
)


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of ``ls-tree -r``: git's canonical mode, object id, path bytes."""

    mode: int
    oid: str
    path: bytes


def _unsafe_component(part: bytes) -> bool:
    if part in (b"", b".", b".."):
        return True
    # NTFS and HFS+ treat trailing dots/spaces and case as insignificant, and "git~1" as a
    # short name of ".git": git refuses all of them (core.protectNTFS is on by default).
    folded = part.rstrip(b". ").lower()
    return folded in (b".git", b"git~1")


def _check_path(entry: TreeEntry) -> None:
    parts = entry.path.split(b"/")
    if any(_unsafe_component(p) for p in parts):
        raise BASE_TREE_UNSAFE(
            "the base commit's tree holds a path named like .git, '.', '..' or empty"
        )
    if entry.mode == 0o120000 and parts[-1].lower() in _NO_SYMLINK:
        raise BASE_TREE_UNSAFE(
            "the base commit's tree holds a symlinked .gitmodules/.gitattributes/.gitignore/"
            ".mailmap"
        )


def _canonical_mode(raw: bytes) -> int:
    mode = _MODES.get(raw)
    if mode is not None:
        return mode
    value = int(raw, 8)
    if stat.S_ISREG(value):  # legacy modes such as 100664 are stored as 644 or 755
        return 0o100755 if value & 0o100 else 0o100644
    raise BASE_TREE_UNSAFE("the base commit's tree holds an entry of an unknown type")


def list_tree(cwd: Path, commit: str) -> list[TreeEntry]:
    """Every non-tree entry of ``commit``'s tree, checked (see the module docstring).

    Raises:
        UnsafeTree: a path git would refuse (exit 2).
        GitFailure: ``git ls-tree`` failed.
    """
    out = run_git(cwd, ["ls-tree", "-r", "-z", "--full-tree", commit], what="git ls-tree")
    entries: list[TreeEntry] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, oid = meta.split(b" ")
        entry = TreeEntry(_canonical_mode(mode), oid.decode("ascii"), path)
        _check_path(entry)
        entries.append(entry)
    return entries


class _Folders:
    """Open folders of the current path, root first; tree order visits each folder's
    entries contiguously, so a folder is closed once the walk leaves it."""

    def __init__(self, root: Path) -> None:
        self.names: list[bytes] = []
        self.fds: list[int] = [os.open(root, _DIR_FLAGS)]

    def enter(self, parents: list[bytes]) -> int:
        keep = 0
        while keep < min(len(self.names), len(parents)) and self.names[keep] == parents[keep]:
            keep += 1
        while len(self.names) > keep:
            self.names.pop()
            os.close(self.fds.pop())
        for name in parents[keep:]:
            os.mkdir(name, 0o777, dir_fd=self.fds[-1])
            self.fds.append(os.open(name, _DIR_FLAGS, dir_fd=self.fds[-1]))
            self.names.append(name)
        return self.fds[-1]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


class _Blobs:
    """``git cat-file --batch`` over a list of object ids: raw bytes, in request order."""

    def __init__(self, cwd: Path, oids: list[str]) -> None:
        self._requests = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._requests.write("".join(f"{oid}\n" for oid in oids).encode("ascii"))
        self._requests.seek(0)
        self._proc = subprocess.Popen(
            git_argv(["cat-file", "--batch"]),
            cwd=cwd,
            env=git_env(),
            stdin=self._requests,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=CHUNK,
        )
        assert self._proc.stdout is not None
        with contextlib.suppress(OSError):  # let git run ahead of the writes (Linux)
            fcntl.fcntl(self._proc.stdout.fileno(), F_SETPIPE_SZ, CHUNK)
        self._out: IO[bytes] = self._proc.stdout

    def next(self, oid: str) -> Iterator[bytes]:
        header = self._out.readline().split(b" ")
        if len(header) != 3 or header[0].decode("ascii", "replace") != oid:
            raise CHECKOUT_FAILED("git cat-file did not return a blob of the base tree")
        left = int(header[2])
        while left:
            chunk = self._out.read(min(left, CHUNK))
            if not chunk:
                raise CHECKOUT_FAILED("git cat-file ended in the middle of a blob")
            left -= len(chunk)
            yield chunk
        self._out.read(1)

    def close(self) -> int:
        self._out.close()
        code = self._proc.wait()
        self._requests.close()
        return code


def _write_file(
    dfd: int, name: bytes, mode: int, chunks: Iterator[bytes], mtime: int
) -> os.stat_result:
    fd = os.open(name, _FILE_FLAGS, 0o777 if mode == 0o100755 else 0o666, dir_fd=dfd)
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.utime(fd, ns=(mtime, mtime))
        return os.fstat(fd)
    finally:
        os.close(fd)


def _write_entry(
    dfd: int, name: bytes, entry: TreeEntry, blobs: _Blobs, mtime: int
) -> os.stat_result:
    if entry.mode == 0o160000:
        os.mkdir(name, 0o777, dir_fd=dfd)
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    if entry.mode == 0o120000:
        target = b"".join(blobs.next(entry.oid))
        if b"\0" in target:
            raise CHECKOUT_FAILED("a symlink of the base tree has a target with a NUL byte")
        os.symlink(target, name, dir_fd=dfd)
        os.utime(name, ns=(mtime, mtime), dir_fd=dfd, follow_symlinks=False)
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    return _write_file(dfd, name, entry.mode, blobs.next(entry.oid), mtime)


def write_tree_files(
    root: Path, cwd: Path, entries: list[TreeEntry], mtime_ns: int
) -> list[IndexEntry]:
    """Write every entry below the empty folder ``root``; return the index entries.

    ``cwd`` is where git runs (the repository). Raises :class:`CheckoutFailed` (exit 4)
    when git or the filesystem fails; what was written stays.
    """
    blobs = _Blobs(cwd, [e.oid for e in entries if e.mode != 0o160000])
    folders = _Folders(root)
    out: list[IndexEntry] = []
    try:
        for entry in entries:
            *parents, name = entry.path.split(b"/")
            dfd = folders.enter(parents)
            out.append(
                IndexEntry(
                    entry.path,
                    entry.mode,
                    entry.oid,
                    _write_entry(dfd, name, entry, blobs, mtime_ns),
                )
            )
    except OSError as exc:
        raise CHECKOUT_FAILED(f"writing the worktree's files failed ({exc.strerror})") from exc
    finally:
        folders.close()
        code = blobs.close()
    if code != 0:
        raise CHECKOUT_FAILED(f"git cat-file failed (git exit {code})")
    return out


def write_index(index: Path, entries: list[IndexEntry], object_format: str, after_ns: int) -> None:
    """Write the index file through ``index.lock`` (as git does, so git's own writers wait),
    then make sure its mtime is in a later whole second than ``after_ns``.

    No fsync, as git itself does not fsync an index by default (``core.fsync``): on ext4
    one fsync here flushed the whole checkout's data and cost 0.9 s of a 10,000-file
    creation. The index is derived from the registered commit; a crash before write-back
    loses at most this new worktree's index, never a user's data."""
    lock = index.with_name(index.name + ".lock")
    data = index_bytes(entries, object_format)
    try:
        fd = os.open(lock, _FILE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            written = 0
            while written < len(view):
                written += os.write(fd, view[written:])
        finally:
            os.close(fd)
        os.replace(lock, index)
        limit = time.monotonic() + 5.0
        while os.stat(index).st_mtime_ns // 1_000_000_000 <= after_ns // 1_000_000_000:
            if time.monotonic() > limit:
                raise CHECKOUT_FAILED("the clock did not move past the files' times")
            time.sleep(0.05)
            os.utime(index)
    except OSError as exc:
        raise CHECKOUT_FAILED(f"writing the worktree's index failed ({exc.strerror})") from exc

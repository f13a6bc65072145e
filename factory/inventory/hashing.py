"""Hash listed files on every core, in chunks, with few syscalls per file (SPEC F-6).

Per file: ``openat(folder, name, O_RDONLY|O_NOFOLLOW|O_NONBLOCK)``, ``fstat``, reads until
a short read that reaches the size ``fstat`` reported (one read for a file under
:data:`CHUNK`), ``close``. ``O_NOFOLLOW`` refuses a symlink swapped in after the listing,
``O_NONBLOCK`` keeps a swapped-in FIFO from blocking the open, and ``fstat`` refuses
anything that is not a regular file before a byte is read. Folders are opened one
component at a time from the root's descriptor, each with ``O_NOFOLLOW|O_DIRECTORY``, and
kept in a small cache, so a folder swapped for a symlink is refused too and the kernel
never resolves a long path. No file is ever read whole: big files go through one reusable
:data:`CHUNK`-byte buffer.

Parallelism: the work is cut into batches of consecutive files (already in manifest
order). Batch numbers are written up front into a pipe that serves as the work queue:
each worker reads 4 bytes at a time, and a pipe read is atomic under the pipe's lock, so
each batch goes to exactly one worker and a fast worker simply takes more batches.
Workers are forked processes (part of the per-file cost is interpreter work, which
threads serialise on the GIL; see design/inventory.md for the measurement) sending their
finished lines back through a pipe; the parent works too. When the caller already runs
other threads, forking could copy a held lock into the child, so threads are used
instead.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import marshal
import os
import signal
import stat
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from factory.errors import Code, FactoryError, lookup
from factory.inventory import recipe as r
from factory.inventory.recipe import InventoryRefused, line
from factory.inventory.walk import Problem, kind_of, non_regular, shown

CHUNK = 1 << 20  # bytes per read for big files; also the per-worker buffer
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_OPEN_DIRS = 64  # folder descriptors cached per worker
MAX_BATCHES = 4096  # 4 bytes each: the whole queue fits a default 64 KiB pipe
MIN_FILES_TO_FORK = 64  # below this a fork costs more than it saves

_BATCH = struct.Struct("=I")
_PR_SET_PDEATHSIG = 1  # prctl(2) option, <linux/prctl.h>


@dataclass(frozen=True, slots=True)
class Hashed:
    """The hashed files: the manifest in input order, total bytes, problems found.

    ``pieces`` are LF-joined runs of manifest lines (one per batch), kept unsplit so a
    100,000-file manifest is not cut up and glued again.
    """

    pieces: list[str]
    total_bytes: int
    problems: list[Problem]

    def document(self) -> bytes:
        """The recipe document: every line, LF-joined, no trailing LF, UTF-8."""
        return "\n".join(self.pieces).encode("utf-8")

    @property
    def lines(self) -> list[str]:
        """Every manifest line, in input order."""
        return [ln for piece in self.pieces for ln in piece.split("\n")]


def default_workers() -> int:
    """Worker count: ``$FACTORY_DIGEST_WORKERS`` if set, else the CPUs we may run on."""
    explicit = os.environ.get("FACTORY_DIGEST_WORKERS", "")
    if explicit.isdigit() and int(explicit) > 0:
        return int(explicit)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _open_problem(rel: str, exc: OSError) -> Problem:
    if exc.errno == errno.ELOOP:
        return non_regular(rel, "symlink")  # O_NOFOLLOW met a symlink swapped in
    if exc.errno == errno.ENXIO:
        return non_regular(rel, "socket")  # open(2) of a socket
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Problem(
            rel,
            r.CHANGED_DURING_WALK,
            f"{shown(rel)}: vanished while the tree was measured ({exc.strerror})",
        )
    return Problem(
        rel,
        r.UNREADABLE,
        f"{shown(rel)}: file cannot be read ({exc.strerror})",
    )


class _FolderProblem(Exception):
    """A folder on a file's path could not be opened without following a symlink."""

    def __init__(self, error: OSError, folder: str, is_symlink: bool) -> None:
        super().__init__(error)
        self.error = error
        self.folder = folder
        self.is_symlink = is_symlink


def _folder_problem(rel: str, problem: _FolderProblem) -> Problem:
    if problem.is_symlink:
        return Problem(
            rel,
            r.SYMLINK_REFUSED,
            f"{shown(rel)}: its folder {shown(problem.folder)} became a symlink while the "
            "tree was measured; the recipe never follows symlinks",
        )
    if problem.error.errno == errno.ENOTDIR:
        return Problem(
            rel,
            r.CHANGED_DURING_WALK,
            f"{shown(rel)}: its folder {shown(problem.folder)} is no longer a folder",
        )
    return _open_problem(rel, problem.error)


class _Hasher:
    """Hashes one file at a time with a reusable buffer (one per worker)."""

    def __init__(self, root_fd: int) -> None:
        self.buffer = bytearray(CHUNK)
        self.view = memoryview(self.buffer)
        self.empty = hashlib.sha256()  # copied, so no digest lookup per file
        self.root_fd = root_fd
        self.folders: OrderedDict[str, int] = OrderedDict()

    def close(self) -> None:
        while self.folders:
            os.close(self.folders.popitem()[1])

    def _folder(self, rel_dir: str) -> int:
        """Descriptor of ``rel_dir`` opened component by component without following."""
        if not rel_dir:
            return self.root_fd
        fd = self.folders.get(rel_dir)
        if fd is not None:
            self.folders.move_to_end(rel_dir)
            return fd
        # Climb to the nearest cached ancestor (or the root) without recursion: a tree
        # may nest deeper than Python's recursion limit (1,500 levels of "a/" fit in
        # PATH_MAX), then open downwards one component at a time.
        missing = [rel_dir]
        while True:
            parent = missing[-1].rpartition("/")[0]
            if not parent:
                parent_fd = self.root_fd
                break
            cached = self.folders.get(parent)
            if cached is not None:
                self.folders.move_to_end(parent)
                parent_fd = cached
                break
            missing.append(parent)
        for path in reversed(missing):
            name = path.rpartition("/")[2]
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
            except OSError as exc:
                # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP): look.
                try:
                    is_link = stat.S_ISLNK(os.lstat(name, dir_fd=parent_fd).st_mode)
                except OSError:
                    is_link = False
                raise _FolderProblem(exc, path, is_link) from None
            self.folders[path] = child
            if len(self.folders) > MAX_OPEN_DIRS:
                os.close(self.folders.popitem(last=False)[1])  # never the one just opened
            parent_fd = child
        return parent_fd

    def file(self, rel: str) -> tuple[int, str] | Problem:
        folder, _, name = rel.rpartition("/")
        try:
            fd = os.open(name, OPEN_FLAGS, dir_fd=self._folder(folder))
        except _FolderProblem as problem:
            return _folder_problem(rel, problem)
        except OSError as exc:
            return _open_problem(rel, exc)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                # Listed as a file, now a folder: a folder is fine in a tree, so this is a
                # change under our feet, not a refused kind of entry.
                return Problem(
                    rel,
                    r.CHANGED_DURING_WALK,
                    f"{shown(rel)}: became a folder while the tree was measured",
                )
            if not stat.S_ISREG(st.st_mode):
                return non_regular(rel, kind_of(st.st_mode))
            expected = st.st_size
            if expected < CHUNK:
                # One read covers the file; asking for one byte more shows it ended.
                data = os.read(fd, expected + 1)
                h = self.empty.copy()
                h.update(data)
                if len(data) == expected:
                    return expected, h.hexdigest()
                # Short of the size fstat gave (keep reading; a shrunk file reads 0) or
                # past it (the file grew): finish with the chunk loop.
                return self._rest(fd, h, len(data), expected)
            return self._rest(fd, self.empty.copy(), 0, expected)
        except OSError as exc:
            return _open_problem(rel, exc)
        finally:
            os.close(fd)

    def _rest(self, fd: int, h: hashlib._Hash, size: int, expected: int) -> tuple[int, str]:
        view = self.view
        while True:
            n = os.readv(fd, [self.buffer])
            if n == 0:
                break
            h.update(view[:n])
            size += n
            if n < CHUNK and size >= expected:
                break
        return size, h.hexdigest()


def _batches(count: int) -> list[tuple[int, int]]:
    per = max(1, -(-count // MAX_BATCHES))
    return [(start, min(start + per, count)) for start in range(0, count, per)]


def _work(
    rels: list[str],
    root_fd: int,
    batches: list[tuple[int, int]],
    next_batch: Callable[[], int | None],
) -> Iterator[tuple[int, str, int, list[Problem]]]:
    """Yield ``(batch, joined_lines, bytes, problems)`` for each batch this worker takes."""
    hasher = _Hasher(root_fd)
    try:
        yield from _batches_of(hasher, rels, batches, next_batch)
    finally:
        hasher.close()


def _batches_of(
    hasher: _Hasher,
    rels: list[str],
    batches: list[tuple[int, int]],
    next_batch: Callable[[], int | None],
) -> Iterator[tuple[int, str, int, list[Problem]]]:
    while (b := next_batch()) is not None:
        start, end = batches[b]
        out: list[str] = []
        total = 0
        problems: list[Problem] = []
        for i in range(start, end):
            rel = rels[i]
            got = hasher.file(rel)
            if isinstance(got, Problem):
                problems.append(got)
                continue
            total += got[0]
            out.append(line(rel, got[0], got[1]))
        yield b, "\n".join(out), total, problems


def _pipe_queue(read_fd: int) -> Callable[[], int | None]:
    def take() -> int | None:
        data = os.read(read_fd, _BATCH.size)
        return _BATCH.unpack(data)[0] if data else None

    return take


def _read_all(fd: int) -> bytes:
    parts = []
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


Result = tuple[int, str, int, list[tuple[str, str, str]]]


def _pack(item: tuple[int, str, int, list[Problem]]) -> Result:
    b, text, total, problems = item
    # Codes cross the worker pipe by name (marshal carries plain values only).
    return b, text, total, [(p.path, p.code.name, p.message) for p in problems]


def hash_files(
    rels: list[str], root: str | os.PathLike[str], *, workers: int | None = None
) -> Hashed:
    """Hash the files ``rels`` under ``root`` and return their manifest lines in input order.

    Args:
        rels: recipe paths (``/``-separated, relative to ``root``), already in manifest
            (ordinal) order.
        root: the measured folder; opened once, every file is reached from it.
        workers: processes (or threads) to use; default :func:`default_workers`.

    Problems (unreadable, swapped for a non-regular entry, vanished) are collected, not
    raised, so the caller can report the ordinal-first one.
    """
    count = len(rels)
    wanted = workers if workers is not None else default_workers()
    batches = _batches(count)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if wanted <= 1 or count < MIN_FILES_TO_FORK:
            it = iter(range(len(batches)))
            results = [_pack(r) for r in _work(rels, root_fd, batches, lambda: next(it, None))]
        elif threading.active_count() > 1:
            results = _with_threads(rels, root_fd, batches, wanted)
        else:
            results = _with_processes(rels, root_fd, batches, wanted)
    finally:
        os.close(root_fd)
    return _assemble(results, len(batches))


def _code(name: str) -> Code[InventoryRefused]:
    code = lookup(name)
    if code is None or code.error is not InventoryRefused:
        raise FactoryError(f"a hashing worker sent an unknown refusal code {name!r}")
    return code


def _assemble(results: list[Result], batch_count: int) -> Hashed:
    texts: list[str] = [""] * batch_count
    total = 0
    problems: list[Problem] = []
    for b, text, size, found in results:
        texts[b] = text
        total += size
        problems.extend(Problem(path, _code(name), what) for path, name, what in found)
    pieces = [t for t in texts if t]  # a batch of refused files only leaves ""
    return Hashed(pieces=pieces, total_bytes=total, problems=problems)


def _with_threads(
    rels: list[str], root_fd: int, batches: list[tuple[int, int]], workers: int
) -> list[Result]:
    it = iter(range(len(batches)))
    lock = threading.Lock()

    def take() -> int | None:
        with lock:
            return next(it, None)

    results: list[Result] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            got = [_pack(r) for r in _work(rels, root_fd, batches, take)]
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
            return
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _die_with_parent(parent: int) -> None:
    """In a forked worker: ask the kernel for SIGKILL when the parent dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _with_processes(
    rels: list[str], root_fd: int, batches: list[tuple[int, int]], workers: int
) -> list[Result]:
    queue_r, queue_w = os.pipe()
    _write_all(queue_w, b"".join(_BATCH.pack(b) for b in range(len(batches))))
    os.close(queue_w)  # readers see EOF once the queue is drained
    children: list[tuple[int, int]] = []
    parent = os.getpid()
    finished = False
    try:
        for _ in range(workers - 1):
            result_r, result_w = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                # Out of processes or memory: the workers we have (at least this one)
                # drain the queue anyway.
                os.close(result_r)
                os.close(result_w)
                break
            if pid == 0:  # pragma: no cover - runs in the child, reported via the pipe
                code = 1
                try:
                    _die_with_parent(parent)
                    os.close(result_r)
                    queue = _pipe_queue(queue_r)
                    got = [_pack(r) for r in _work(rels, root_fd, batches, queue)]
                    _write_all(result_w, marshal.dumps(got))
                    code = 0
                finally:
                    os._exit(code)
            os.close(result_w)
            children.append((pid, result_r))
        results = [_pack(r) for r in _work(rels, root_fd, batches, _pipe_queue(queue_r))]
        finished = True
    finally:
        os.close(queue_r)
        if not finished:
            # Interrupted or failed here: stop the workers instead of waiting for them to
            # drain the queue.
            for pid, _ in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        collected: list[Result] = []
        failed = False
        for pid, result_r in children:
            data = _read_all(result_r)
            os.close(result_r)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                failed = True
            elif finished:
                # Bytes from our own forked child over a private pipe, not outside input.
                collected.extend(marshal.loads(data))  # noqa: S302
    if failed:
        raise RuntimeError("an inventory hashing worker process failed")
    return results + collected

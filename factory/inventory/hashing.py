"""Hash the listed files of a tree on every core (SPEC F-6).

Each worker opens and hashes files with its own :class:`factory.inventory.reader.TreeReader`
(never leaving the tree, one reusable buffer); this module only shares the work out and
puts the results back in manifest order.

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
import marshal
import os
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from factory.errors import Code, FactoryError, lookup
from factory.inventory.reader import TreeReader
from factory.inventory.recipe import InventoryRefused, line
from factory.inventory.walk import Problem

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
    hasher = TreeReader(root_fd)
    try:
        yield from _batches_of(hasher, rels, batches, next_batch)
    finally:
        hasher.close()


def _batches_of(
    hasher: TreeReader,
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

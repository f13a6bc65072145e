"""The commit protocol of the event log ``D/events.jsonl`` (SPEC B-3, B-4); its bytes —
lines, parsing, refusals, the fixed point — are :mod:`factory.bus.logfile`.

Commit (:meth:`EventLog.commit`): take ``flock(LOCK_EX)`` on ``D/events.lock`` (the kernel
drops it when the holder dies, so there is no stale lock to break) → bring the replayed
state up to date with the file → decide → one ``write`` of one line → ``fsync`` → release.

Cost per commit does not grow with the log when nobody else wrote: the process caches the
state it replayed together with the file's ``(st_dev, st_ino, st_size, st_mtime_ns,
st_ctime_ns)`` and the SHA-256 of the bytes it validated. If the tuple is unchanged, no
write, truncate or ``utime`` reached the file since (each sets ``st_ctime`` to the current
time, which userspace cannot set back); see ``design/bus.md`` for the exact claim and its
residual. If the file grew (another writer committed), the validated prefix is re-hashed
(cheap: no parsing) and must match before only the new tail is parsed and replayed. Any
other change (shrunk, replaced, prefix rewritten) is ``CorruptLog``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar

from factory.bus.logfile import (
    CHUNK,
    FIXED_POINT_FORMAT,
    LINE_TOO_LONG,
    LOG_NAME,
    LOG_REWRITTEN,
    LOG_UNUSABLE,
    LOG_VANISHED,
    MAX_LINE_BYTES,
    PATH_ROLE,
    TORN_TAIL,
    corrupt,
    fixed_point,
    fold,
    iter_lines,
    open_log,
    parse_line,
    read_lines,
)
from factory.bus.model import Event
from factory.bus.reducer import ReplayError, State, apply, check
from factory.documents.canonical import canonical_bytes
from factory.errors import FactoryError, Failure
from factory.fsio import fsync_dir

LOCK_NAME: Final = "events.lock"

R = TypeVar("R")
Clock = Callable[[], str]
Writer = Callable[[int, bytes], int]


def utc_timestamp() -> str:
    """The default clock: UTC now as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class LockTimeout(Failure):
    """Another process held the bus lock for longer than the timeout (exit 4)."""


LOCK_TIMEOUT = LockTimeout.define(
    "bus-lock-timeout", "find the process holding it (fuser) and retry", default=True
)
LOCK_UNUSABLE = Failure.define(
    "bus-lock-unusable", "make the lock a plain file the bus can create, or use a new data dir"
)
WRITE_FAILED = Failure.define(
    "bus-write-failed", "free space on the device, keep the log as evidence, use a new data dir"
)


@dataclass(slots=True)
class _Validated:
    """What this process proved about the file: its identity tuple and the prefix digest."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    digest: Any  # hashlib sha256 object over bytes [0, size)
    lines: int

    def same_file(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino) == (self.dev, self.ino)

    def unchanged(self, st: os.stat_result) -> bool:
        return self.same_file(st) and (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
            self.size,
            self.mtime_ns,
            self.ctime_ns,
        )


class EventLog:
    """The bus's event log in ``data_dir`` (which must exist).

    Args:
        data_dir: folder holding ``events.jsonl`` and ``events.lock``.
        clock: source of ``at`` (default :func:`utc_timestamp`).
        lock_timeout_s: seconds to wait for the lock before :class:`LockTimeout`.
        writer: ``os.write`` (tests inject a torn writer).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock = utc_timestamp,
        lock_timeout_s: float = 10.0,
        writer: Writer = os.write,
    ) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOG_NAME
        self.lock_path = data_dir / LOCK_NAME
        self._clock = clock
        self._lock_timeout_s = lock_timeout_s
        self._writer = writer
        self._state: State | None = None
        self._proof: _Validated | None = None
        self.stats = {"full": 0, "tail": 0, "cached": 0}

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive bus lock (``flock``; released by the kernel if we die)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.lock_path, flags, 0o600)
        except OSError as exc:
            why = "a symlink, never followed" if exc.errno == errno.ELOOP else exc.strerror
            raise LOCK_UNUSABLE(f"cannot open the bus lock {self.lock_path} ({why})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LOCK_UNUSABLE(f"the bus lock {self.lock_path} is not a regular file")
        try:
            deadline = time.monotonic() + self._lock_timeout_s
            pause = 0.0005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise
                if time.monotonic() >= deadline:
                    raise LOCK_TIMEOUT(
                        f"the bus lock {self.lock_path} stayed held for {self._lock_timeout_s:g} s"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 0.01)
            yield
        finally:
            os.close(fd)  # closing the only descriptor drops the flock

    def state(self) -> State:
        """The replayed state, brought up to date under the lock (raises :class:`CorruptLog`)."""
        with self.locked():
            return self._refresh()

    def _forget(self) -> None:
        self._state = None
        self._proof = None

    def _refresh(self) -> State:
        f = open_log(self.path)
        if f is None:
            if self._proof is not None and self._proof.size > 0:
                # The proof is kept: this process goes on refusing what it saw vanish.
                raise corrupt(0, LOG_VANISHED, "the log this process validated is gone") from None
            self._state, self._proof = State(), None
            return self._state
        with f:
            st = os.fstat(f.fileno())
            proof, state = self._proof, self._state
            if proof is not None and state is not None and proof.unchanged(st):
                self.stats["cached"] += 1
                return state
            if proof is None or state is None:
                return self._full(f, st)
            if not proof.same_file(st) or st.st_size < proof.size:
                raise corrupt(proof.lines, LOG_REWRITTEN, "the log was replaced or truncated")
            self._prove_prefix(f, proof)
            self._forget()  # a failure while folding the tail must not leave a half state
            digest = proof.digest.copy()
            lines = self._fold_tail(f, state, digest, proof.lines)
            self.stats["tail"] += 1
            self._remember(st, state, digest, proof.lines + lines)
            return state

    def _full(self, f: BinaryIO, st: os.stat_result) -> State:
        state = State()
        digest = hashlib.sha256()
        lines = self._fold_tail(f, state, digest, 0)
        self.stats["full"] += 1
        self._remember(st, state, digest, lines)
        return state

    @staticmethod
    def _prove_prefix(f: BinaryIO, proof: _Validated) -> None:
        h = hashlib.sha256()
        remaining = proof.size
        while remaining:
            chunk = f.read(min(CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            remaining -= len(chunk)
        if remaining or h.digest() != proof.digest.digest():
            raise corrupt(proof.lines, LOG_REWRITTEN, "bytes already validated have changed")

    @staticmethod
    def _fold_tail(f: BinaryIO, state: State, digest: Any, lines_before: int) -> int:
        count = 0

        def tee() -> Iterator[bytes]:
            nonlocal count
            for raw in read_lines(f):
                digest.update(raw)
                count += 1
                yield raw

        fold(state, tee(), lines_before + 1)
        return count

    def _remember(self, st: os.stat_result, state: State, digest: Any, lines: int) -> None:
        self._state = state
        self._proof = _Validated(
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest, lines
        )

    def commit(self, decide: Callable[[State, str], tuple[Event, R]]) -> tuple[Event, R]:
        """Validate → replay → ``decide(state, at)`` → one write → fsync, under the lock.

        ``decide`` must not mutate the state. Returns its ``(event, result)`` once the event
        is durable.

        Raises:
            CorruptLog: the log (or its tail written by another process) is invalid.
            LockTimeout: the lock stayed held past the timeout.
            Failure: the write was short (``bus-write-failed``); the log now has a torn tail.
        """
        with self.locked():
            state = self._refresh()
            event, result = decide(state, self._clock())
            try:
                check(state, event)
            except ReplayError as exc:  # a bug in decide; refuse before writing anything
                # A bug in decide, not a fault of the log or the caller: internal (exit 1).
                raise FactoryError(f"decided event is inadmissible: {exc.message}") from None
            line = canonical_bytes(event.to_json_value()) + b"\n"
            if parse_line(line[:-1], 0) != event:
                raise FactoryError("event does not survive its own serialisation")
            self._append(line)
            apply(state, event)
            return event, result

    def _append(self, line: bytes) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        created = not os.path.lexists(self.path)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:  # nothing written
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise LOG_UNUSABLE(f"cannot append to {self.path} ({exc.strerror})") from None
            raise WRITE_FAILED(
                f"cannot open {self.path} ({exc.strerror}); nothing was recorded"
            ) from None
        try:
            before = os.fstat(fd).st_size
            try:
                written = self._writer(fd, line)
            except OSError as exc:  # a full device, an I/O error: the write did not happen
                self._forget()
                raise WRITE_FAILED(
                    f"the event could not be written to {self.path} ({exc.strerror}); it was "
                    "not recorded"
                ) from None
            if written != len(line):
                self._forget()
                raise WRITE_FAILED(
                    f"short write to {self.path} ({written} of {len(line)} bytes); "
                    + _cut_back(fd, before)
                )
            try:
                os.fsync(fd)
            except OSError as exc:
                self._forget()
                raise WRITE_FAILED(
                    f"the event written to {self.path} could not be made durable "
                    f"({exc.strerror}); " + _cut_back(fd, before)
                ) from None
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if created:
            with contextlib.suppress(OSError):  # the line is durable; the entry may not be
                fsync_dir(self.data_dir)
        proof = self._proof
        if proof is None or proof.size != before or st.st_size != before + len(line):
            self._forget()  # someone wrote outside the protocol; re-prove from scratch next time
            return
        proof.digest.update(line)
        proof.size, proof.mtime_ns, proof.ctime_ns = st.st_size, st.st_mtime_ns, st.st_ctime_ns
        proof.lines += 1


__all__ = [  # the log's bytes are factory.bus.logfile; these names stay importable here
    "FIXED_POINT_FORMAT",
    "LINE_TOO_LONG",
    "LOCK_NAME",
    "LOG_NAME",
    "MAX_LINE_BYTES",
    "PATH_ROLE",
    "TORN_TAIL",
    "EventLog",
    "LockTimeout",
    "fixed_point",
    "iter_lines",
    "open_log",
    "parse_line",
    "read_lines",
    "utc_timestamp",
]


def _cut_back(fd: int, size: int) -> str:
    """Truncate the log back to ``size`` after a failed append (the lock is held): the log
    is left as it was, never with a torn tail that would make it unusable for good. The
    words say which happened."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as exc:
        return f"the log could not be cut back ({exc.strerror}) and now ends in a torn line"
    return "the log was cut back to its last whole event: nothing was recorded"

"""Capturing a child's stdout or stderr: in memory or spooled to a file as it arrives (P-1).

A stream keeps at most ``cap`` bytes. What comes after the cap is still read and counted
(never stored), so a capture always knows the true number of bytes the child wrote before
its stream closed: ``total_bytes`` ≥ ``kept_bytes``, and ``truncated`` when they differ.

Spooled (``spool`` given): the kept bytes go to a new file (``O_EXCL``, no symlink
followed, mode 0600) chunk by chunk as they arrive, hashed on the way, so a 50 MB stream
costs no memory and a run that is killed leaves what it had captured on disk. In memory:
the kept bytes are held in a ``bytearray`` (probes, tests).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import trio

Overflow = Literal["stop", "drain"]
"""What a stream over its cap does: ``stop`` the run (``output-limit``), or ``drain`` —
keep the run going, keep counting, store nothing more (diagnostics such as stderr)."""

_CHUNK = 64 * 1024
_LINE_LIMIT = 16 << 20


@dataclass(frozen=True, slots=True)
class Captured:
    """One finished stream.

    Attributes:
        data: the kept bytes when captured in memory; ``b""`` when spooled.
        spool: the spool file holding the kept bytes, or None (in memory).
        kept_bytes: bytes stored (≤ the cap).
        total_bytes: bytes the child wrote on the stream and the factory read.
        sha256: plain SHA-256 hex of the kept bytes.
    """

    data: bytes
    spool: Path | None
    kept_bytes: int
    total_bytes: int
    sha256: str

    @property
    def truncated(self) -> bool:
        """The child wrote more than the cap; only the first ``kept_bytes`` were kept."""
        return self.total_bytes > self.kept_bytes

    @classmethod
    def of(cls, data: bytes) -> Captured:
        """An in-memory capture of exactly ``data`` (fakes and tests)."""
        return cls(data, None, len(data), len(data), hashlib.sha256(data).hexdigest())

    def read(self, limit: int | None = None) -> bytes:
        """The kept bytes (at most ``limit``); reads the spool file when spooled."""
        if self.spool is None:
            return self.data if limit is None else self.data[:limit]
        with open(self.spool, "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)

    def tail(self, limit: int) -> bytes:
        """The last ``limit`` kept bytes (for a one-line diagnostic)."""
        if self.spool is None:
            return self.data[-limit:]
        with open(self.spool, "rb") as fh:
            fh.seek(max(0, self.kept_bytes - limit))
            return fh.read(limit)

    def lines(self) -> Iterator[bytes]:
        """The kept bytes line by line (LF kept), without loading a spool into memory.

        A line longer than 16 MiB comes back in pieces; parsers treat a piece that is not
        JSON as garbage, as they do a line cut by the cap.
        """
        if self.spool is None:
            yield from self.data.splitlines(keepends=True)
            return
        with open(self.spool, "rb") as fh:
            while raw := fh.readline(_LINE_LIMIT):
                yield raw


class SpoolError(OSError):
    """The spool file could not be created or written (disk full, permissions)."""


@dataclass(slots=True)
class Sink:
    """A stream being captured: the pump's state while the child runs."""

    cap: int
    overflow: Overflow = "stop"
    spool: Path | None = None
    data: bytearray = field(default_factory=bytearray)
    kept: int = 0
    total: int = 0
    error: OSError | None = None
    done: trio.Event = field(default_factory=trio.Event)
    _fd: int = -1
    _hash: Any = field(default_factory=hashlib.sha256)

    def open(self) -> None:
        """Create the spool file (when spooled). Raises :class:`SpoolError`."""
        if self.spool is None:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self._fd = os.open(self.spool, flags, 0o600)
        except OSError as exc:
            raise SpoolError(exc.errno, f"cannot create spool file: {exc.strerror}") from exc

    @property
    def truncated(self) -> bool:
        return self.total > self.kept

    def take(self, chunk: bytes | bytearray) -> bool:
        """Account for ``chunk``; True when this chunk crossed the cap for the first time."""
        was_truncated = self.truncated
        self.total += len(chunk)
        room = self.cap - self.kept
        keep = bytes(chunk[:room]) if room > 0 else b""
        if keep and self.error is None:
            self._store(keep)
        return not was_truncated and self.truncated

    def _store(self, keep: bytes) -> None:
        if self._fd < 0:
            self.data += keep
        else:
            try:
                view = memoryview(keep)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                self.error = exc
                return
        self._hash.update(keep)
        self.kept += len(keep)

    def close(self) -> Captured:
        """Flush the spool to disk and describe what was captured."""
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self.error = self.error or exc
            finally:
                os.close(self._fd)
                self._fd = -1
        return Captured(
            data=bytes(self.data),
            spool=self.spool,
            kept_bytes=self.kept,
            total_bytes=max(self.total, self.kept),
            sha256=self._hash.hexdigest(),
        )

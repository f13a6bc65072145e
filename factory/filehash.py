"""The one regular-file hasher: the bytes of a file become ``(size, sha256 hex)`` here
(SPEC F-4, F-6, A-4, A-5, A-7).

Used by the inventory digest, the review's worktree binding, the candidate's per-file
digests, evidence read-back and verification, and the smoke tracer's artifact.

* A file is opened with ``O_NOFOLLOW|O_NONBLOCK``: a symlink is never followed and a FIFO
  swapped in never blocks the open; ``fstat`` then refuses anything that is not a regular
  file before a byte is read (:class:`NotRegular`, an ``OSError``).
* A file smaller than :data:`CHUNK` (the size ``fstat`` reported) is read in one ``read``
  of one byte more than that size, which also shows it ended; anything larger goes through
  one reusable :data:`CHUNK`-byte buffer, so memory stays bounded whatever the size. A
  file that grows or shrinks while it is read is hashed as read (the size returned is the
  number of bytes hashed).

A :class:`FileHasher` keeps its buffer between files; it is not shared between threads
(:func:`hasher` gives each thread its own).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from pathlib import Path
from typing import Final

CHUNK: Final = 1 << 20
OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegular(OSError):
    """The opened entry is not a regular file (``errno`` ``EINVAL``); ``mode`` is its
    ``st_mode``."""

    def __init__(self, mode: int) -> None:
        super().__init__(errno.EINVAL, "not a regular file")
        self.mode = mode


class FileHasher:
    """SHA-256 of regular files through one reusable buffer."""

    def __init__(self) -> None:
        self._buffer: bytearray | None = None
        self._empty = hashlib.sha256()  # copied: no digest lookup per file

    def digest_fd(self, fd: int, expected: int) -> tuple[int, str]:
        """``(bytes read, sha256 hex)`` of the open file ``fd`` from its current offset;
        ``expected`` is the size ``fstat`` reported (one read covers a small file)."""
        if expected < CHUNK:
            data = os.read(fd, expected + 1)
            h = self._empty.copy()
            h.update(data)
            if len(data) == expected:
                return expected, h.hexdigest()
            # Short of the size (keep reading; a shrunk file reads 0) or past it (grew).
            return self._rest(fd, h, len(data), expected)
        return self._rest(fd, self._empty.copy(), 0, expected)

    def _rest(self, fd: int, h: hashlib._Hash, size: int, expected: int) -> tuple[int, str]:
        if self._buffer is None:
            self._buffer = bytearray(CHUNK)
        buffer, view = self._buffer, memoryview(self._buffer)
        while True:
            n = os.readv(fd, [buffer])
            if n == 0:
                break
            h.update(view[:n])
            size += n
            if n < CHUNK and size >= expected:
                break
        return size, h.hexdigest()

    def digest_open(self, fd: int) -> tuple[int, str]:
        """Like :meth:`digest_fd`, after checking with ``fstat`` that ``fd`` is a regular
        file (:class:`NotRegular` otherwise)."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(st.st_mode)
        return self.digest_fd(fd, st.st_size)

    def digest_at(self, name: str | bytes | Path, *, dir_fd: int | None = None) -> tuple[int, str]:
        """``(size, sha256 hex)`` of the regular file ``name`` (relative to ``dir_fd`` when
        given), never following a symlink.

        Raises:
            OSError: it cannot be opened (``ELOOP`` for a symlink), or :class:`NotRegular`.
        """
        fd = os.open(name, OPEN_FLAGS, dir_fd=dir_fd)
        try:
            return self.digest_open(fd)
        finally:
            os.close(fd)


_local = threading.local()


def hasher() -> FileHasher:
    """This thread's :class:`FileHasher`."""
    mine: FileHasher | None = getattr(_local, "hasher", None)
    if mine is None:
        mine = _local.hasher = FileHasher()
    return mine


def digest_file(path: str | bytes | Path, *, dir_fd: int | None = None) -> tuple[int, str]:
    """``(size, sha256 hex)`` of the regular file at ``path``, with this thread's hasher."""
    return hasher().digest_at(path, dir_fd=dir_fd)

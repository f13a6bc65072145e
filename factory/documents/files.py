"""Safe reads of a document file: a regular file, never blocking, never more than a cap.

* opened with ``O_NOFOLLOW|O_NONBLOCK`` (:data:`factory.filehash.OPEN_FLAGS`): a symlink is
  never followed and a FIFO swapped in never blocks the open;
* ``fstat`` refuses anything that is not a regular file before a byte is read
  (:class:`factory.filehash.NotRegular`);
* a file whose reported size is over ``limit`` is refused before reading
  (:class:`TooLarge`), and at most ``limit + 1`` bytes are ever read, so a file that grows
  while it is read is refused too instead of filling memory.

Errors are ``OSError`` subclasses so a caller's existing "cannot read" handling meets them.
Stdlib only.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from factory.filehash import OPEN_FLAGS, NotRegular

__all__ = ["NotRegular", "TooLarge", "read_document"]


class TooLarge(OSError):
    """The file holds more than ``limit`` bytes (``errno`` ``EFBIG``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes")
        self.limit = limit


def read_document(
    path: str | Path, *, limit: int, dir_fd: int | None = None, follow: bool = False
) -> bytes:
    """The bytes of the regular file ``path`` (relative to ``dir_fd`` when given).

    ``follow=True`` follows a symlink in the last component (a path a person named on the
    command line); the target must still be a regular file, and a FIFO still never blocks.

    Raises:
        OSError: it cannot be opened (``ELOOP`` for a symlink, ``ENOENT``, ...),
            :class:`NotRegular` or :class:`TooLarge`.
    """
    flags = OPEN_FLAGS & ~os.O_NOFOLLOW if follow else OPEN_FLAGS
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(st.st_mode)
        if st.st_size > limit:
            raise TooLarge(limit)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size + 1, 65536)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise TooLarge(limit)
        return data
    finally:
        os.close(fd)

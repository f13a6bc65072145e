"""The review store's one lock: an OS lock with owner metadata, never broken by time.

``<store>/LOCK`` is locked with ``flock(LOCK_EX | LOCK_NB)``. The kernel releases it when
the holder exits — a crash included — so there is no stale lock to break and no age after
which anyone would break it. After acquiring, the holder writes who it is
(``factory.review-store-lock/1``: owner id, pid, host, command, acquired_at) into the file,
so a second process that finds it busy can name the owner. The metadata of a holder that
died stays in the file and is harmless: only the kernel lock decides. The file is never
deleted (a new inode would let two holders lock "the same" path).
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import json
import os
import secrets
import shlex
import stat
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from factory.review.errors import STORE_LOCK_NOT_FILE, ReviewStoreBusy, ReviewStoreInvalid

LOCK_SCHEMA = "factory.review-store-lock/1"
DEFAULT_WAIT_S = 5.0
_POLL_S = 0.02


def _owner(path: Path) -> str:
    """Who holds the lock, from its metadata; anything unreadable (truncated, not JSON,
    hostile nesting that exhausts the decoder's recursion) is an unknown owner."""
    try:
        doc = json.loads(path.read_bytes()[:4096] or b"{}")
        return (
            f"pid {int(doc['pid'])} on {str(doc['host'])[:64]!r} since "
            f"{str(doc['acquired_at'])[:40]} ({str(doc['command'])[:40]})"
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return "an unknown owner (no readable owner metadata)"


class StoreLock:
    """Context manager holding the store lock for one command.

    Args:
        path: the ``LOCK`` file (created 0600 if missing).
        command: what the holder is doing (``review/finalize``), for the busy message.
        wait_s: how long to retry a busy lock before giving up (never breaks it).
    """

    def __init__(
        self,
        path: Path,
        *,
        command: str,
        wait_s: float = DEFAULT_WAIT_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = path
        self.command = command
        self.wait_s = wait_s
        self._clock = clock
        self._sleep = sleep
        self._fd: int | None = None
        self.owner_id = secrets.token_hex(8)

    def _open(self) -> int:
        """The lock file, opened without following a link; anything but a regular file at
        its path is ``review-store-lock-not-file`` (never a crash, never followed)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno not in (errno.EISDIR, errno.ELOOP, errno.ENXIO):
                raise
            raise self._not_file() from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise self._not_file()
        return fd

    def _not_file(self) -> ReviewStoreInvalid:
        st = os.lstat(self.path)
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else kind
        aside = shlex.quote(f"{self.path}.not-a-lock")
        return ReviewStoreInvalid(
            f"the review store's lock {self.path} is {kind}, so the store cannot be locked",
            code=STORE_LOCK_NOT_FILE,
            next=(f"mv {shlex.quote(str(self.path))} {aside}", "factory review status"),
        )

    def __enter__(self) -> StoreLock:
        fd = self._open()
        deadline = self._clock() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if self._clock() >= deadline:
                    os.close(fd)
                    raise ReviewStoreBusy(
                        f"the review store is locked by {_owner(self.path)}"
                    ) from None
                self._sleep(_POLL_S)
        self._fd = fd
        self._write_owner(fd)
        return self

    def _write_owner(self, fd: int) -> None:
        doc = {
            "schema": LOCK_SCHEMA,
            "owner_id": self.owner_id,
            "pid": os.getpid(),
            "host": os.uname().nodename,  # gethostname(), without importing socket
            "command": self.command,
            "acquired_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
        }
        data = json.dumps(doc, sort_keys=True).encode() + b"\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        # Not fsynced: the metadata only names the holder in a busy message, and the kernel
        # lock alone decides; a crash that loses it leaves "an unknown owner", which is true.

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

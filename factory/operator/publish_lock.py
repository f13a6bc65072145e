"""One ``operator publish`` at a time per repository on this machine (issue 24 §5).

Two publishes of one candidate started together both observed "branch absent, no pull
request", both were shown the same intent, and both went on to push and open a pull
request. The publish now holds an exclusive ``flock`` on
``<common dir>/factory/publish.lock`` from its admission (right after its receipt is
reserved, before any prompt, key or forge call) until the command ends; a second publish
meanwhile is refused (``publish-in-progress``, exit 2) with its own refused receipt, and
nothing else happens. The kernel drops the lock when the holder exits, however it ends,
so a crashed publish never wedges the next one.

Publishes on other machines are not serialized by this: the remote's lease (the branch
must not exist) and the forge's one-pull-request-per-branch rule remain the guard there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from factory.errors import Refused


class PublishBusy(Refused):
    """Another publish holds this repository's publish lock (nothing was done)."""


PUBLISH_IN_PROGRESS = PublishBusy.define(
    "publish-in-progress",
    "another 'operator publish' of this repository is running on this machine: let it end,"
    " then run this one again",
)
LOCK_NAME = "publish-lock"


def hold(common_dir: Path) -> int:
    """Take the repository's publish lock without waiting; the open descriptor (keep it
    until the publish ends, then :func:`release`).

    Raises:
        PublishBusy: another process holds it.
    """
    folder = common_dir / "factory" / "runs"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PUBLISH_IN_PROGRESS(
            "another 'operator publish' of this repository holds its publish lock"
        ) from None
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)

"""A tmpfs mounted for one test (the suite runs as root in its container): a small one to
fill (``ENOSPC``) or a read-only one (``EROFS``, which stops root where permission bits do
not). Skips the test where mounting is not allowed."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(mnt: Path, options: str, why_skip: str = "") -> Iterator[Path]:
    """Mount a tmpfs with ``options`` (``-o``) on the new folder ``mnt``; unmount after."""
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}){why_skip}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)

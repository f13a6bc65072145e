"""``factory review show`` writing into a pipe whose reader went away (``| head -1``), or
onto a full device: the first is not a failure, the second is a typed one (exit 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.review.cli_helpers import edit_parser, review


def _started(repo: Path) -> None:
    edit_parser(repo, lines=2)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0


def _show(repo: Path, stdout: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "factory", "review", "show", "--cwd", str(repo)],
        stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
        timeout=120, check=False,
    )  # fmt: skip


def test_a_reader_that_went_away_is_not_a_failure(repo: Path) -> None:
    _started(repo)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        proc = _show(repo, write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr and b"internal" not in proc.stderr


def test_a_full_device_is_a_typed_failure(repo: Path) -> None:
    """The twin: a write that fails for another reason is not hidden."""
    _started(repo)
    with open("/dev/full", "wb") as full:
        proc = _show(repo, full.fileno())
    assert proc.returncode == 4
    assert b"output-write-failed" in proc.stderr


def test_show_prints_the_lineage_to_a_reader_that_stays(repo: Path) -> None:
    _started(repo)
    ran = review("show", "--cwd", str(repo), cwd=repo)
    assert ran.code == 0 and b"review lineage review-" in ran.stdout

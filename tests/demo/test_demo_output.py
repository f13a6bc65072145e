"""``factory demo`` whose stdout reader goes away (``factory demo | head -1``) or whose
stdout is a full device: the first is not a failure (the run and its report stand), the
second is a typed failure naming where the report is kept — never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _demo(demo: Path, stdout: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "factory", "demo", "--dir", str(demo)],
        stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
        timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.realcli
def test_a_reader_that_went_away_is_not_a_failure(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = _demo(tmp_path / "demo", write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"Traceback" not in proc.stderr and b"internal" not in proc.stderr
    assert (tmp_path / "demo" / "demo-report.json").is_file()


@pytest.mark.realcli
def test_a_full_device_is_a_typed_failure_naming_the_report(tmp_path: Path) -> None:
    """The twin: a write that fails for another reason is not hidden."""
    with open("/dev/full", "wb") as full:
        proc = _demo(tmp_path / "demo", full.fileno())
    err = proc.stderr.decode()
    assert proc.returncode == 4 and "factory: output-write-failed: " in err, err[-2000:]
    assert str(tmp_path / "demo" / "demo-report.json") in err

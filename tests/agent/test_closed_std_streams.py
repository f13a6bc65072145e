"""A caller that closed fd 1 or fd 2 (daemons, some supervisors): Python then sets
``sys.stdout``/``sys.stderr`` to ``None``. Observed before the fix: with fd 2 closed the
one-line diagnostic went to stdout (``print(file=None)`` falls back to it), breaking F-2;
with fd 1 closed a completed run exited 1 ('internal error') although its receipt was
written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.layout import Layout

FAKE = Path(__file__).with_name("fake_factory.py")


def sh(script: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", script, "sh", sys.executable, *args], capture_output=True, timeout=120
    )


def test_with_stderr_closed_a_refusal_writes_nothing_to_stdout(tmp_path: Path) -> None:
    proc = sh(
        '"$1" -m factory agent --worktree "$2" --task t --out "$3" 2>&-',
        str(tmp_path / "missing"),
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 2 and proc.stdout == b""
    twin = sh(
        '"$1" -m factory agent --worktree "$2" --task t --out "$3"',
        str(tmp_path / "missing"),
        str(tmp_path / "r.json"),
    )
    assert twin.returncode == 2 and b"worktree-missing" in twin.stderr and twin.stdout == b""


def test_with_stdout_closed_a_completed_run_still_exits_0(layout: Layout) -> None:
    args = ["--worktree", str(layout.wt), "--task", "t", "--out", str(layout.receipt)]
    proc = sh('"$1" "$2" approve -- agent "${@:3}" >&-', str(FAKE), *args)
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert b'"status":"completed"' in layout.receipt.read_bytes()

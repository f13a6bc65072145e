"""Every benchmark script named in the README answers ``--help`` as a user runs it
(``scripts/bench_X --help`` from a shell whose ``python3`` lacks factory's dependencies),
and refuses an unknown flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = (
    "bench_digest",
    "bench_bus",
    "bench_supervise",
    "bench_fork_chain",
    "bench_agent",
    "bench_observers",
    "bench_worktree",
    "bench_streams",
    "bench_operator",
    "bench_gate",
    "bench_review",
)


def _bare_env() -> dict[str, str]:
    """PATH without the venv, so ``#!/usr/bin/env python3`` finds a bare interpreter."""
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return {"PATH": path, "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C.UTF-8"}


def _run(repo_root: Path, script: str, flag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(repo_root / "scripts" / script), flag],
        capture_output=True,
        text=True,
        env=_bare_env(),
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_answers_help(repo_root: Path, script: str) -> None:
    proc = _run(repo_root, script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:"), proc.stdout[:200]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_refuses_unknown_flag(repo_root: Path, script: str) -> None:
    proc = _run(repo_root, script, "--no-such-flag")
    assert proc.returncode == 2, proc.stderr
    assert "unrecognized arguments" in proc.stderr

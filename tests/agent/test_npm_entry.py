"""``npm run factory:agent -- …`` takes the same flags as ``factory agent`` (SPEC F-1), keeps
stdout to the receipt (F-2: the repository's ``.npmrc`` puts npm in JSON mode, which sends
its banner to stderr) and passes the exit code through (F-3).

In JSON mode npm itself appends one JSON object, ``{"error": {"code": N, …}}``, to stdout
when the script exits non-zero: :func:`own_output` checks that this is all npm added and
returns the command's own bytes (the price of a mistyped script failing loudly; see
``tests/scripts/test_npm_scripts.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.agent.scenarios import GREET, TEST, reviewer, scenario, worker
from tests.support.cli import own_output
from tests.support.layout import Layout

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH"),
    pytest.mark.skipif(
        not (REPO / ".venv" / "bin" / "factory").exists(),
        reason="scripts/setup has not created .venv in this checkout",
    ),
]


def npm_agent(
    layout: Layout, *flags: str, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    argv = ["npm", "run", "factory:agent", "--", "--worktree", str(layout.wt), "--out"]
    argv += [str(layout.receipt), *flags]
    return subprocess.run(argv, cwd=REPO, capture_output=True, timeout=timeout, check=False)


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (["--task", "  "], "task-required"),
        (["--task", "t", "--timeout-ms", "999"], "timeout-out-of-range"),
        (["--task", "t", "--otel-endpoint", "http://localhost:4318"], "otel-endpoint-refused"),
        (["--task", "t", "--bogus"], None),
    ],
)
def test_npm_refusals_arrive_as_the_same_flags(
    layout: Layout, flags: list[str], code: str | None
) -> None:
    proc = npm_agent(layout, *flags)
    assert proc.returncode == 2, proc.stderr
    assert own_output(proc) == b""  # no npm banner, no partial output
    if code is not None:
        assert f"factory: {code}:".encode() in proc.stderr
    assert not layout.receipt.exists() and not layout.evidence.exists()


@pytest.mark.realcli
def test_npm_runs_the_rehearsal_cycle_and_passes_exit_3_through(
    layout: Layout, tmp_path: Path
) -> None:
    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("REQUEST_CHANGES"),
        worker("test_greeting.py", TEST, role="repair"),
        reviewer("REQUEST_CHANGES"),
    )
    proc = npm_agent(
        layout,
        "--task",
        "add greet()",
        "--timeout-ms",
        "120000",
        "--progress",
        "jsonl",
        "--rehearsal",
        str(path),
        timeout=600,
    )
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert own_output(proc) == layout.receipt.read_bytes()  # stdout is exactly the receipt
    r = json.loads(own_output(proc))
    assert r["status"] == "rejected" and r["route"] == "rehearsal"
    assert b'"schema":"factory.agent-progress/1"' in proc.stderr  # --progress jsonl arrived


@pytest.mark.realcli
def test_a_signal_to_npm_alone_interrupts_the_run(layout: Layout, tmp_path: Path) -> None:
    # A supervisor signals the npm process, not its group. npm forwards the signal to its
    # script's shell; without 'exec' in the script the shell swallowed it, npm died with
    # SIGINT and the run went on to complete unobserved (observed before the fix).
    import os
    import signal
    import time

    import psutil

    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("APPROVE", "sleep 56"),
    )
    proc = subprocess.Popen(
        [
            "npm",
            "run",
            "factory:agent",
            "--",
            "--worktree",
            str(layout.wt),
            "--out",
            str(layout.receipt),
            "--task",
            "t",
            "--rehearsal",
            str(path),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )

    def sleeping() -> bool:
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "sleep 56" in " ".join(child.cmdline()):
                    return True
            except psutil.Error:
                pass
        return False

    deadline = time.monotonic() + 60
    while not sleeping():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert own_output(done) == layout.receipt.read_bytes()
    assert json.loads(own_output(done))["status"] == "interrupted"

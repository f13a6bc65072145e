"""A factory killed with SIGKILL mid-run (issue 8 §4): its process tree dies with it, and
its ``running`` receipt then reads as ``abandoned``, not as a run in progress."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.agent.conftest import Layout
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes, install_fakes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[Fakes]:
    handle = install_fakes(tmp_path / "fakebin")
    yield handle
    assert handle.survivors() == [], "a fake CLI process outlived its factory"


def _alive(doc: dict[str, object]) -> bool:
    try:
        proc = psutil.Process(int(doc["pid"]))  # type: ignore[call-overload]
        same = abs(proc.create_time() - float(doc["create_time"])) < 0.02  # type: ignore[arg-type]
        return same and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _exists(doc: dict[str, object]) -> bool:
    """Still in the process table; reaped here when the orphan's zombie is ours (the
    suite becomes a child subreaper once it ran the supervised runner in-process)."""
    pid = int(doc["pid"])  # type: ignore[call-overload]
    if not _alive(doc):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    try:
        return abs(psutil.Process(pid).create_time() - float(doc["create_time"])) < 0.02  # type: ignore[arg-type]
    except psutil.NoSuchProcess:
        return False


def _verify(receipt: Path) -> tuple[int, dict[str, object], bytes]:
    proc = run_factory(["receipt", "verify", str(receipt)])
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_a_sigkilled_factory_takes_its_tree_and_leaves_an_abandoned_receipt(
    layout: Layout, fakes: Fakes
) -> None:
    fakes.mode(claude="hang")
    env = {**os.environ, "PATH": f"{fakes.bin}:{os.environ['PATH']}"}
    args = ["agent", "--worktree", str(layout.wt), "--task", "t", "--out", str(layout.receipt)]
    factory = subprocess.Popen(
        [sys.executable, "-m", "factory", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        fakes.wait_records("run", 1, timeout=60)
        fakes.wait_records("helper", 1, timeout=30)
        # Twin first: while the factory lives, the receipt is a run in progress.
        rc, report, err = _verify(layout.receipt)
        assert (rc, report["status"], report["liveness"]) == (4, "running", "running")
        assert b"still in progress" in err
    finally:
        factory.send_signal(signal.SIGKILL)
        factory.wait()
    processes = fakes.records("run") + fakes.records("helper")
    deadline = time.time() + 10
    while any(_exists(d) for d in processes) and time.time() < deadline:
        time.sleep(0.05)
    assert not [d["kind"] for d in processes if _alive(d)]  # dead (a zombie at most) ...
    assert not any(_exists(d) for d in processes)  # ... and reaped by its new parent
    rc, report, err = _verify(layout.receipt)
    assert (rc, report["status"], report["liveness"]) == (4, "running", "abandoned")
    assert b"abandoned" in err
    shown = run_factory(["receipt", "show", str(layout.receipt)], env={**env, "COLUMNS": "200"})
    assert b"ABANDONED" in shown.stdout
    # the spooled worker stdout is still there, for whoever investigates
    spools = sorted(p.name for p in layout.evidence.glob("*.spool"))
    assert spools == ["worker-stderr.spool", "worker-stdout.spool"]
    assert b'"subtype": "init"' in (layout.evidence / "worker-stdout.spool").read_bytes()

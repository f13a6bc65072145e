"""The agent run against real (fake-CLI) process trees and floods (issue 8 §4, §5).

The real closed profiles run fake ``claude``/``codex`` executables through the supervised
runner; the receipt, its evidence and the worktree are then checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from factory.agent.admission import AgentRequest
from factory.agent.evidence import resolve_evidence_path
from factory.agent.receipt import AgentReceipt, PhaseRecord
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.agent.verify import verify
from factory.provider_api import SubscriptionRoute
from providers import ClaudeProfile, CodexProfile, Effects
from tests.agent.conftest import Layout
from tests.support.fake_cli import Fakes, install_fakes


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[Fakes]:
    handle = install_fakes(tmp_path / "fakebin")
    yield handle
    assert handle.survivors() == [], "a fake CLI process outlived its run"


async def _run(layout: Layout, fakes: Fakes, *, timeout_ms: int = 20_000) -> RunOutcome:
    fx = Effects(environ={"PATH": f"{fakes.bin}:/usr/bin:/bin"}, fallback_dirs=(), grace_s=3.0)
    deps = AgentDeps(agent=ClaudeProfile(fx), reviewer=CodexProfile(fx), route=SubscriptionRoute())
    request = AgentRequest(
        worktree=layout.wt, task="edit", receipt=layout.receipt, timeout_ms=timeout_ms
    )
    return await run_agent(request, deps)


def _collect(fakes: Fakes, kind: str) -> None:
    """End a negative control's unsupervised process and reap it: the suite is a child
    subreaper once the runner ran, so the orphan's zombie is ours."""
    for doc in fakes.records(kind):
        pid = int(doc["pid"])  # type: ignore[call-overload]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _phase(receipt: AgentReceipt, name: str) -> PhaseRecord:
    return next(p for p in receipt.phases if p.phase == name)


def _evidence(receipt: AgentReceipt, layout: Layout, phase: str, role: str) -> bytes:
    ref = next(e for e in _phase(receipt, phase).evidence if e.role == role)
    return resolve_evidence_path(ref, layout.receipt).read_bytes()


async def test_a_grandchild_never_acts_after_the_worker_deadline(
    layout: Layout, fakes: Fakes
) -> None:
    """The issue's example: 2 s deadline, a SIGTERM-ignoring grandchild that would write
    into the worktree at +2.5 s, 3 s of grace: the file never appears."""
    fakes.mode(claude="late-grandchild")
    t0 = time.time()
    outcome = await _run(layout, fakes, timeout_ms=2000)
    r = outcome.receipt
    assert (outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "provider-timeout"
    time.sleep(max(0.0, t0 + 3.5 - time.time()))
    assert not (layout.wt / "late.txt").exists()
    worker = _phase(r, "worker")
    # A failed phase keeps the CLI version, argv shape, its streams and the sweep.
    assert worker.cli_version == "2.1.332 (Claude Code)" and worker.argv_shape[0] == "claude"
    assert {e.role for e in worker.evidence} == {"worker-stdout", "worker-stderr"}
    assert worker.swept_processes is not None and worker.swept_processes >= 1
    assert b'"subtype": "init"' in _evidence(r, layout, "worker", "worker-stdout")
    assert len(fakes.records("grandchild")) == 1
    assert verify(layout.receipt)["evidence"] and all(
        e["ok"] for e in verify(layout.receipt)["evidence"]
    )


def test_without_supervision_the_same_grandchild_writes(layout: Layout, fakes: Fakes) -> None:
    """Negative control: the same fake run by hand leaves a grandchild that writes."""
    fakes.mode(claude="late-grandchild")
    leader = subprocess.Popen(
        [str(fakes.bin / "claude"), "-p"], cwd=layout.wt, stdin=subprocess.DEVNULL
    )
    try:
        deadline = time.time() + 15
        while not (layout.wt / "late.txt").exists() and time.time() < deadline:
            time.sleep(0.05)
        assert (layout.wt / "late.txt").exists()
    finally:
        leader.kill()
        leader.wait()
        _collect(fakes, "grandchild")


async def test_leftovers_of_a_finished_worker_are_swept_before_binding(
    layout: Layout, fakes: Fakes
) -> None:
    fakes.mode(claude="leftover", codex="ok")
    outcome = await _run(layout, fakes)
    r = outcome.receipt
    assert (outcome.exit_code, r.status) == (0, "completed")
    worker = _phase(r, "worker")
    assert worker.swept_processes == 1
    assert _phase(r, "initial_review").swept_processes == 0
    assert r.candidate.initial is not None
    assert [f.path for f in r.candidate.initial.body.files] == ["worker-was-here.txt"]
    time.sleep(1.5)  # past the moment the leftover would have written
    assert not (layout.wt / "late.txt").exists()
    assert verify(layout.receipt)["ok"]


def test_unswept_the_leftover_writes(layout: Layout, fakes: Fakes) -> None:
    """Negative control: by hand, the leftover outlives its leader and writes."""
    fakes.mode(claude="leftover")
    subprocess.run([str(fakes.bin / "claude"), "-p"], cwd=layout.wt, input=b"", check=True)
    deadline = time.time() + 15
    while not (layout.wt / "late.txt").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (layout.wt / "late.txt").exists()
    _collect(fakes, "leftover")


async def test_stderr_overflow_is_truncation_not_failure(layout: Layout, fakes: Fakes) -> None:
    """3 MB on the worker's stderr: the run completes; the stderr evidence keeps its first
    MiB, marked truncated with the true byte count."""
    fakes.mode(claude="stderr-flood", codex="ok")
    outcome = await _run(layout, fakes)
    r = outcome.receipt
    assert (outcome.exit_code, r.status) == (0, "completed")
    ref = next(e for e in _phase(r, "worker").evidence if e.role == "worker-stderr")
    assert ref.truncated and ref.bytes == 1 << 20 and ref.stream_bytes == 3_000_000
    data = resolve_evidence_path(ref, layout.receipt).read_bytes()
    assert data == b"d" * (1 << 20)
    assert verify(layout.receipt)["ok"]
    doc = json.loads(layout.receipt.read_bytes())
    stderr_doc = next(e for e in doc["phases"][0]["evidence"] if e["role"] == "worker-stderr")
    assert stderr_doc["truncated"] is True and stderr_doc["stream_bytes"] == 3_000_000
    # twin: an untruncated stream carries neither field
    stdout_doc = next(e for e in doc["phases"][0]["evidence"] if e["role"] == "worker-stdout")
    assert "truncated" not in stdout_doc and "stream_bytes" not in stdout_doc


async def test_stdout_overflow_fails_but_keeps_what_was_captured(
    layout: Layout, fakes: Fakes
) -> None:
    fakes.mode(claude="stdout-flood")
    outcome = await _run(layout, fakes)
    r = outcome.receipt
    assert (outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "provider-output-limit"
    worker = _phase(r, "worker")
    assert worker.cli_version == "2.1.332 (Claude Code)" and worker.argv_shape
    ref = next(e for e in worker.evidence if e.role == "worker-stdout")
    assert ref.truncated and ref.bytes == 16 << 20
    assert ref.stream_bytes is not None and ref.stream_bytes > ref.bytes
    head = resolve_evidence_path(ref, layout.receipt).read_bytes()[:200]
    assert head.startswith(b'{"type": "system"')
    assert not list(layout.evidence.glob("*.spool"))  # every spool was adopted
    assert all(e["ok"] for e in verify(layout.receipt)["evidence"])


async def test_a_failed_review_keeps_its_streams(layout: Layout, fakes: Fakes) -> None:
    fakes.mode(claude="ok", codex="unauthorized")
    outcome = await _run(layout, fakes)
    r = outcome.receipt
    assert r.error is not None and r.error.code == "provider-auth-required"
    review = _phase(r, "initial_review")
    assert review.cli_version == "codex-cli 0.171.0" and review.argv_shape[:2] == [
        "codex",
        "exec",
    ]
    assert {e.role for e in review.evidence} == {"initial-review-stdout", "initial-review-stderr"}
    assert b"turn.failed" in _evidence(r, layout, "initial_review", "initial-review-stdout")

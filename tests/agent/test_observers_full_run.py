"""Progress and telemetry through the real agent run (SPEC A-9, A-10), fake providers.

Sentinels for the task text, provider output and paths travel through a full run; none of
them may appear in progress lines or exported spans. Broken observers leave the phase
table's outcome exactly as it is.
"""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from factory.agent.observer import FanOut, RunObserver
from factory.agent.progress import ProgressObserver
from factory.agent.receipt import AgentReceipt
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.agent.telemetry import ALLOWED_ATTRIBUTE_KEYS, TelemetryObserver
from factory.provider_api import ProviderResult, Role, Route, Spool, SubscriptionRoute
from tests.agent.conftest import Layout
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write
from tests.agent.helpers import request
from tests.support.otlp import http_receiver, refused_port

TASK = "TASK-SENTINEL-91c2: make add() add"
PROVIDER = b"PROVIDER-SENTINEL-44ab sk-SECRET-SENTINEL"
FIX = write("src/app.py", "def add(a, b):\n    return a + b  # fixed\n")
TEST = write("tests/test_app.py", "def test_add():\n    assert 1 + 2 == 3\n")


class SlowAgent(FakeAgent):
    """A fake agent that takes 25 s of (virtual) time, so heartbeats fire."""

    async def run_agent(
        self,
        *,
        role: Role,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        spool: Spool | None = None,
    ) -> ProviderResult:
        await trio.sleep(25)
        return await super().run_agent(
            role=role, worktree=worktree, prompt=prompt, timeout_ms=timeout_ms, route=route
        )


class RaisingStream(io.StringIO):
    def write(self, s: str) -> int:
        raise OSError("stderr is gone")


def _steps(reject: bool) -> tuple[list[Step], list[Step]]:
    agent = [Step(effect=FIX, stdout=PROVIDER), Step(effect=TEST, stdout=PROVIDER)]
    final = "REQUEST_CHANGES" if reject else "APPROVE"
    reviewer = [
        Step(verdict="REQUEST_CHANGES", stdout=PROVIDER),
        Step(verdict=final, stdout=PROVIDER),
    ]
    return agent, reviewer


async def _run(
    layout: Layout, observer: RunObserver, *, reject: bool, heartbeat: ProgressObserver | None
) -> tuple[RunOutcome, int]:
    agent_steps, reviewer_steps = _steps(reject)
    agent, reviewer = SlowAgent(agent_steps), FakeReviewer(reviewer_steps)
    deps = AgentDeps(agent=agent, reviewer=reviewer, route=SubscriptionRoute(), observer=observer)
    async with trio.open_nursery() as nursery:
        if heartbeat is not None:
            nursery.start_soon(heartbeat.heartbeat, 10.0)
        outcome = await run_agent(request(layout, TASK), deps)
        nursery.cancel_scope.cancel()
    return outcome, len(agent.calls) + len(reviewer.calls)


def _forbidden(layout: Layout) -> list[str]:
    return [
        "TASK-SENTINEL",
        "PROVIDER-SENTINEL",
        "SECRET-SENTINEL",
        str(layout.wt),
        str(layout.out),
        str(layout.repo),
        "make add",
    ]


@pytest.mark.parametrize("reject", [False, True])
async def test_progress_through_a_full_run(
    layout: Layout, reject: bool, autojump_clock: trio.testing.MockClock
) -> None:
    jl, hu = io.StringIO(), io.StringIO()
    jsonl = ProgressObserver("jsonl", jl, 600000)
    human = ProgressObserver("human", hu, 600000, live=False)
    outcome, calls = await _run(layout, FanOut(jsonl, human), reject=reject, heartbeat=jsonl)
    assert (outcome.exit_code, calls) == ((3, 4) if reject else (0, 4))
    records = [json.loads(line) for line in jl.getvalue().splitlines()]
    bounds = [r["remaining_provider_time_upper_bound_ms"] for r in records]
    assert all(a >= b for a, b in itertools.pairwise(bounds)) and bounds[-1] == 0
    assert bounds[0] == 4 * 600000
    assert any(r["event"] == "heartbeat" for r in records)
    stages = [r["stage"] for r in records if r["event"] == "stage"]
    assert stages[0] == "validating" and stages[-1] == "terminal_outcome"
    assert {"repair_running", "final_review_verdict"} <= set(stages)
    assert records[-1]["outcome"] == ("rejected" if reject else "completed")
    for text in (jl.getvalue(), hu.getvalue()):
        for sentinel in _forbidden(layout):
            assert sentinel not in text
    # Negative control: the sentinels did travel through the run (receipt and evidence).
    receipt_text = layout.receipt.read_text()
    assert "TASK-SENTINEL" in receipt_text
    assert any(PROVIDER in p.read_bytes() for p in layout.evidence.iterdir() if p.is_file())


def _summary(outcome: RunOutcome) -> tuple[Any, ...]:
    r: AgentReceipt = outcome.receipt
    return (
        outcome.exit_code,
        r.status,
        r.verdict,
        r.error,
        [(p.phase, p.outcome) for p in r.phases],
        r.candidate.initial.body.files if r.candidate.initial else None,
        r.candidate.repaired.body.files if r.candidate.repaired else None,
    )


EXPECTED_REJECTED = (
    3,
    "rejected",
    "REQUEST_CHANGES",
    None,
    [
        ("worker", "ok"),
        ("initial_review", "REQUEST_CHANGES"),
        ("repair", "ok"),
        ("final_review", "REQUEST_CHANGES"),
    ],
)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: FanOut(), id="no-observer"),
        pytest.param(lambda: ProgressObserver("jsonl", RaisingStream(), 1000), id="jsonl-raising"),
        pytest.param(
            lambda: ProgressObserver("human", RaisingStream(), 1000, live=True),
            id="live-raising",
        ),
        pytest.param(
            lambda: TelemetryObserver(f"http://127.0.0.1:{refused_port()}"), id="otel-refused"
        ),
    ],
)
async def test_broken_observers_leave_the_outcome_alone(
    layout: Layout, make: Any, autojump_clock: trio.testing.MockClock
) -> None:
    observer = make()
    heartbeat = observer if isinstance(observer, ProgressObserver) else None
    outcome, calls = await _run(layout, observer, reject=True, heartbeat=heartbeat)
    assert calls == 4, outcome.receipt.error
    assert _summary(outcome)[:5] == EXPECTED_REJECTED
    on_disk = AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))
    assert on_disk == outcome.receipt


async def test_telemetry_through_a_full_run(layout: Layout) -> None:
    with http_receiver() as (port, received):
        telemetry = TelemetryObserver(f"http://127.0.0.1:{port}")
        agent_steps, reviewer_steps = _steps(reject=False)
        deps = AgentDeps(
            agent=FakeAgent(agent_steps),
            reviewer=FakeReviewer(reviewer_steps),
            route=SubscriptionRoute(),
            observer=telemetry,
        )
        outcome = await run_agent(request(layout, TASK), deps)
        spans = received.spans()
        raw = b"".join(body for _, _, _, body in received.requests)
    assert outcome.exit_code == 0, outcome.receipt.error
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        f"factory.agent.{n}"
        for n in ("cycle", "worker", "initial_review", "repair", "final_review")
    )
    for span in spans:
        assert set(span["attributes"]) <= ALLOWED_ATTRIBUTE_KEYS
    cycle = next(s for s in spans if s["name"] == "factory.agent.cycle")
    assert cycle["attributes"]["factory.outcome"] == "completed"
    assert cycle["attributes"]["factory.exit_code"] == 0
    for sentinel in _forbidden(layout):
        assert sentinel.encode() not in raw

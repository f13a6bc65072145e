"""Observation never changes an outcome (A-9); every return path leaves a terminal receipt
(A-2), including cancellation, Ctrl-C and a crashing provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from factory.agent.receipt import AgentReceipt
from tests.agent.conftest import Layout
from tests.agent.fakes import Step, chain, write
from tests.agent.helpers import Recorder, run

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
TASK = "fix add() — secret-task-marker"


def on_disk(layout: Layout) -> AgentReceipt:
    return AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))


def bounds(rec: Recorder) -> list[int]:
    return [s[1] for s in rec.stages]


async def test_bound_sequence_on_approve(layout: Layout) -> None:
    rec = Recorder()
    await run(layout, [Step(effect=FIX)], [Step()], observer=rec, task=TASK)
    assert [(s[0], s[1]) for s in rec.stages] == [
        ("validating", 4),
        ("worker_running", 4),
        ("worker_completed", 3),
        ("initial_review_running", 3),
        ("initial_review_verdict", 0),
        ("terminal_outcome", 0),
    ]
    assert rec.stages[-1][3] == "completed" and rec.closed == [("completed", 0)]
    assert rec.phases == [
        ("start", "worker"),
        ("end", "worker:ok"),
        ("start", "initial_review"),
        ("end", "initial_review:APPROVE"),
    ]


async def test_bound_sequence_on_four_calls_never_increases_and_ends_at_zero(
    layout: Layout,
) -> None:
    rec = Recorder()
    await run(
        layout,
        [Step(effect=FIX), Step(effect=write("t.py", "x\n"))],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")],
        observer=rec,
        task=TASK,
    )
    assert bounds(rec) == [4, 4, 3, 3, 2, 2, 1, 1, 0, 0], json.loads(layout.receipt.read_bytes())
    assert rec.closed == [("rejected", 3)]
    shown = repr(rec)
    assert "secret-task-marker" not in shown and str(layout.wt) not in shown


async def test_bound_reaches_zero_on_failure(layout: Layout) -> None:
    rec = Recorder()
    await run(layout, [Step()], [Step()], observer=rec)
    assert bounds(rec)[-1] == 0 and rec.closed == [("failed", 4)]
    assert all(a >= b for a, b in zip(bounds(rec), bounds(rec)[1:], strict=False))


class Exploding:
    def stage(self, *a: object, **k: object) -> None:
        raise RuntimeError("writer broke")

    def phase_started(self, *a: object, **k: object) -> None:
        raise OSError("disk full")

    def phase_ended(self, *a: object, **k: object) -> None:
        raise ValueError("bad")

    def close(self, *a: object, **k: object) -> None:
        raise RuntimeError("close broke")


async def test_a_raising_observer_changes_nothing(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=write("t.py", "x\n"))],
        [Step(verdict="REQUEST_CHANGES"), Step()],
        observer=Exploding(),
    )
    assert ran.outcome.exit_code == 0 and ran.provider_calls == 4
    assert on_disk(layout).status == "completed"


async def test_cancellation_during_the_worker_leaves_an_interrupted_receipt(
    layout: Layout,
) -> None:
    started = trio.Event()
    scope = trio.CancelScope()

    finished: list[bool] = []

    async def go() -> None:
        with scope:
            await run(layout, [Step(effect=chain(FIX, lambda _: started.set()), hang=True)], [])
            finished.append(True)  # only reached if cancellation were swallowed

    async with trio.open_nursery() as nursery:
        nursery.start_soon(go)
        await started.wait()
        # a running reservation is on disk while the worker runs
        assert json.loads(layout.receipt.read_bytes())["status"] == "running"
        scope.cancel()
    assert finished == [] and scope.cancelled_caught
    r = on_disk(layout)
    assert r.status == "interrupted" and r.exit_code == 130
    assert r.error and r.error.code == "interrupted"
    assert r.phases[0].outcome == "interrupted"
    assert r.revision == r.compute_revision()


async def test_keyboard_interrupt_from_a_provider(layout: Layout) -> None:
    with pytest.raises(KeyboardInterrupt):
        await run(layout, [Step(effect=FIX)], [Step(raise_exc=KeyboardInterrupt())])
    r = on_disk(layout)
    assert r.status == "interrupted" and r.exit_code == 130
    assert r.phases[-1].phase == "initial_review"


async def test_a_crashing_provider_still_leaves_a_terminal_receipt(layout: Layout) -> None:
    with pytest.raises(RuntimeError):
        await run(layout, [Step(raise_exc=RuntimeError("provider bug"))], [])
    r = on_disk(layout)
    assert r.status == "failed" and r.exit_code == 1
    assert r.error and r.error.code == "internal" and "provider bug" not in r.error.message


async def test_error_messages_carry_no_paths(layout: Layout) -> None:
    def commit(wt: Path) -> None:
        from tests.support.git import git

        git(wt, "commit", "-q", "-am", "x")

    ran = await run(layout, [Step(effect=chain(FIX, commit))], [])
    error = ran.outcome.receipt.error
    assert error is not None and error.code == "worker-git-mutation"
    root = str(layout.wt.parent)
    assert root not in error.message and root not in json.dumps(error.model_dump())


async def test_a_provider_failure_wrapped_in_a_group_is_still_typed(layout: Layout) -> None:
    from factory.provider_api import PROVIDER_NETWORK

    group = ExceptionGroup("nursery", [PROVIDER_NETWORK("x")])
    ran = await run(layout, [Step(raise_exc=group)], [])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 4 and r.error and r.error.code == "provider-network"


async def test_a_reviewer_failure_wrapped_in_a_group_still_gets_mutation_checks(
    layout: Layout,
) -> None:
    from factory.provider_api import PROVIDER_PROTOCOL

    group = ExceptionGroup("nursery", [PROVIDER_PROTOCOL("x")])
    ran = await run(layout, [Step(effect=FIX)], [Step(raise_exc=group)])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 4 and r.error and r.error.code == "reviewer-protocol"

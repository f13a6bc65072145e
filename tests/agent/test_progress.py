"""Progress (SPEC A-9): stage lines, heartbeats, the never-increasing bound, silence on failure."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest
import trio
import trio.testing

from factory.agent.observer import FanOut, NullObserver, Outcome, RunObserver, Stage
from factory.agent.progress import (
    BOUND_LABEL,
    PROGRESS_SCHEMA,
    ProgressObserver,
    ProgressRecord,
    clamp_outcome,
    clamp_stage,
    clamp_verdict,
    format_duration_ms,
    next_remaining,
)

TIMEOUT_MS = 1000

# The stage script of a run that goes worker → REQUEST_CHANGES → repair → REQUEST_CHANGES.
REJECT_SCRIPT: list[tuple[Stage, int, str | None, Outcome | None]] = [
    ("validating", 4, None, None),
    ("worker_running", 4, None, None),
    ("worker_completed", 3, None, None),
    ("initial_review_running", 3, None, None),
    ("initial_review_verdict", 2, "REQUEST_CHANGES", None),
    ("repair_running", 2, None, None),
    ("repair_completed", 1, None, None),
    ("final_review_running", 1, None, None),
    ("final_review_verdict", 0, "REQUEST_CHANGES", None),
    ("terminal_outcome", 0, None, "rejected"),
]
APPROVE_SCRIPT: list[tuple[Stage, int, str | None, Outcome | None]] = [
    ("validating", 4, None, None),
    ("worker_running", 4, None, None),
    ("worker_completed", 3, None, None),
    ("initial_review_running", 3, None, None),
    ("initial_review_verdict", 0, "APPROVE", None),
    ("terminal_outcome", 0, None, "completed"),
]


class RaisingStream(io.StringIO):
    """A writer whose every write and flush raises."""

    def write(self, s: str) -> int:
        raise OSError("stderr is gone")

    def flush(self) -> None:
        raise OSError("stderr is gone")


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def _records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


Script = Sequence[tuple[Stage, int, str | None, Outcome | None]]


def _play(observer: RunObserver, script: Script) -> None:
    for stage, remaining, verdict, outcome in script:
        observer.stage(stage, remaining_invocations=remaining, verdict=verdict, outcome=outcome)


async def _fake_run(
    observer: RunObserver, script: Sequence[tuple[Stage, int, str | None, Outcome | None]]
) -> tuple[Outcome, int]:
    """A stand-in for the agent run's control flow: stages, phases, heartbeat, close."""
    outcome: Outcome = script[-1][3] or "failed"
    code = {"completed": 0, "rejected": 3, "failed": 4, "interrupted": 130}[outcome]
    async with trio.open_nursery() as nursery:
        if isinstance(observer, ProgressObserver):
            nursery.start_soon(observer.heartbeat, 10.0)
        for stage, remaining, verdict, out in script:
            observer.stage(stage, remaining_invocations=remaining, verdict=verdict, outcome=out)
            if stage.endswith("_running"):
                observer.phase_started("worker")
                await trio.sleep(23)  # never on a heartbeat tick, so ordering is fixed
                observer.phase_ended("worker", outcome="ok", duration_ms=23000)
        observer.close(outcome=outcome, exit_code=code)
        nursery.cancel_scope.cancel()
    return outcome, code


# ---- the bound -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "bounds"),
    [
        (REJECT_SCRIPT, [4000, 4000, 3000, 3000, 2000, 2000, 1000, 1000, 0, 0]),
        (APPROVE_SCRIPT, [4000, 4000, 3000, 3000, 0, 0]),
    ],
)
def test_bound_sequence_never_increases_and_ends_at_zero(
    script: list[tuple[Stage, int, str | None, Outcome | None]], bounds: list[int]
) -> None:
    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS)
    _play(obs, script)
    obs.close(outcome=script[-1][3] or "failed", exit_code=0)
    records = _records(out.getvalue())
    got = [r["remaining_provider_time_upper_bound_ms"] for r in records]
    assert got == bounds
    assert all(a >= b for a, b in itertools.pairwise(got))
    assert got[-1] == 0
    assert [r["stage"] for r in records] == [s[0] for s in script]
    for r in records:
        ProgressRecord.model_validate(r)  # the documented schema, strictly
        assert r["schema"] == PROGRESS_SCHEMA
        assert r["bound_label"] == BOUND_LABEL
        bound = r["remaining_provider_time_upper_bound_ms"]
        assert bound == r["remaining_invocations"] * TIMEOUT_MS


def test_a_caller_that_raises_the_count_cannot_raise_the_bound() -> None:
    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS)
    obs.stage("worker_running", remaining_invocations=2)
    obs.stage("initial_review_running", remaining_invocations=4)  # would increase
    obs.stage("repair_running", remaining_invocations=99)
    obs.stage("final_review_running", remaining_invocations=-3)
    obs.stage("final_review_verdict", remaining_invocations=1, verdict="APPROVE")
    obs.stage("terminal_outcome", remaining_invocations=3, outcome="completed")  # ends at 0
    got = [r["remaining_invocations"] for r in _records(out.getvalue())]
    assert got == [2, 2, 2, 0, 0, 0]


def test_next_remaining_negative_control_decreases_normally() -> None:
    assert next_remaining(4, 3, "worker_completed") == 3
    assert next_remaining(3, 3, "initial_review_running") == 3
    assert next_remaining(3, 4, "initial_review_running") == 3
    assert next_remaining(1, 1, "terminal_outcome") == 0
    assert next_remaining(2, "2", "repair_running") == 2  # not an int: unchanged
    assert next_remaining(2, True, "repair_running") == 2


# ---- content: no task text, paths, secrets or provider output -------------------------------

SENTINELS = (
    "TASK-SENTINEL-7f3a",
    "/home/someone/secret/path",
    "sk-SECRET-SENTINEL",
    "PROVIDER-SAID",
)


@pytest.mark.parametrize("mode", ["jsonl", "human"])
def test_values_outside_the_vocabulary_never_reach_the_stream(mode: str) -> None:
    out = io.StringIO()
    obs = ProgressObserver(mode, out, TIMEOUT_MS, live=False)  # type: ignore[arg-type]
    obs.stage("validating", remaining_invocations=4)
    obs.stage(SENTINELS[0], remaining_invocations=4)  # type: ignore[arg-type]
    obs.stage("initial_review_verdict", remaining_invocations=0, verdict=SENTINELS[3])
    obs.stage(
        "terminal_outcome",
        remaining_invocations=0,
        verdict=SENTINELS[2],
        outcome=SENTINELS[1],  # type: ignore[arg-type]
    )
    text = out.getvalue()
    assert text.count("\n") == 4
    for sentinel in SENTINELS:
        assert sentinel not in text
    assert "unknown" in text and "INVALID" in text
    lowered = text.replace(BOUND_LABEL, "")
    assert "eta" not in lowered.lower()


def test_clamps_keep_known_values() -> None:
    assert clamp_stage("repair_running") == "repair_running"
    assert clamp_verdict("APPROVE") == "APPROVE"
    assert clamp_verdict(None) is None
    assert clamp_outcome("interrupted") == "interrupted"
    assert clamp_outcome(None) is None


def _jump() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


def test_full_fake_run_has_the_same_content_in_both_modes() -> None:
    async def both() -> tuple[str, str]:
        jl, hu = io.StringIO(), io.StringIO()
        await _fake_run(ProgressObserver("jsonl", jl, TIMEOUT_MS), REJECT_SCRIPT)
        await _fake_run(ProgressObserver("human", hu, TIMEOUT_MS, live=False), REJECT_SCRIPT)
        return jl.getvalue(), hu.getvalue()

    jsonl, human = trio.run(both, clock=_jump())
    records = _records(jsonl)
    lines = human.splitlines()
    assert len(records) == len(lines)
    for record, line in zip(records, lines, strict=True):
        assert record["stage"].replace("_", " ") in line or record["stage"] == "terminal_outcome"
        assert BOUND_LABEL in line
        assert ("still running" in line) == (record["event"] == "heartbeat")


# ---- heartbeat on trio's clock --------------------------------------------------------------


async def test_heartbeat_every_ten_seconds_on_the_trio_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(obs.heartbeat)
        obs.stage("worker_running", remaining_invocations=4)
        await trio.sleep(35)
        obs.stage("worker_completed", remaining_invocations=3)
        nursery.cancel_scope.cancel()
    records = _records(out.getvalue())
    assert [(r["event"], r["elapsed_ms"]) for r in records] == [
        ("stage", 0),
        ("heartbeat", 10000),
        ("heartbeat", 20000),
        ("heartbeat", 30000),
        ("stage", 35000),
    ]
    assert {r["stage"] for r in records[1:4]} == {"worker_running"}


async def test_stale_heartbeat_after_close_stays_silent_and_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS)
    with trio.fail_after(60):  # the task ends by itself; no cancel needed
        async with trio.open_nursery() as nursery:
            nursery.start_soon(obs.heartbeat, 10.0)
            obs.stage("worker_running", remaining_invocations=4)
            await trio.sleep(5)
            obs.close(outcome="interrupted", exit_code=130)
            before = out.getvalue()
            await trio.sleep(30)
            obs.stage("repair_running", remaining_invocations=2)  # after close: silent
    assert out.getvalue() == before
    assert [r["stage"] for r in _records(before)] == ["worker_running", "terminal_outcome"]
    assert _records(before)[-1]["outcome"] == "interrupted"


async def test_heartbeat_negative_control_keeps_beating_while_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(obs.heartbeat, 10.0)
        obs.stage("worker_running", remaining_invocations=4)
        await trio.sleep(35)
        nursery.cancel_scope.cancel()
    assert sum(r["event"] == "heartbeat" for r in _records(out.getvalue())) == 3


async def test_a_failing_timer_ends_the_heartbeat_quietly() -> None:
    async def broken_sleep(seconds: float) -> None:
        raise RuntimeError("timer failed")

    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS, sleep=broken_sleep)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(obs.heartbeat, 10.0)
        obs.stage("worker_running", remaining_invocations=4)
    assert len(_records(out.getvalue())) == 1


def test_a_failing_clock_never_raises() -> None:
    calls = {"n": 0}

    def flaky() -> float:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("clock failed")
        return 100.0

    out = io.StringIO()
    obs = ProgressObserver("jsonl", out, TIMEOUT_MS, clock=flaky)
    obs.stage("worker_running", remaining_invocations=4)
    assert _records(out.getvalue())[0]["elapsed_ms"] == 0


# ---- a failing writer never changes the outcome ---------------------------------------------


@pytest.mark.parametrize("mode", ["jsonl", "human"])
@pytest.mark.parametrize("live", [False, True])
def test_a_raising_writer_changes_nothing(mode: str, live: bool) -> None:
    async def go(observer: RunObserver) -> tuple[Outcome, int]:
        return await _fake_run(observer, REJECT_SCRIPT)

    baseline = trio.run(go, NullObserver(), clock=_jump())
    broken = ProgressObserver(mode, RaisingStream(), TIMEOUT_MS, live=live)  # type: ignore[arg-type]
    assert trio.run(go, broken, clock=_jump()) == baseline == ("rejected", 3)
    # Negative control: the same run with a working writer writes lines and ends the same.
    good = io.StringIO()
    working = ProgressObserver(mode, good, TIMEOUT_MS, live=False)  # type: ignore[arg-type]
    assert trio.run(go, FanOut(working), clock=_jump()) == baseline
    assert good.getvalue().count("\n") >= len(REJECT_SCRIPT)


# ---- human rendering ------------------------------------------------------------------------


def test_plain_lines_off_a_terminal() -> None:
    out = io.StringIO()
    obs = ProgressObserver("human", out, 600000)
    _play(obs, APPROVE_SCRIPT)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(APPROVE_SCRIPT)
    assert "\x1b" not in out.getvalue()
    assert lines[1] == (
        "factory agent | worker running | elapsed 0s | "
        "provider time upper bound 40m 00s (not an ETA)"
    )
    assert "initial review verdict: APPROVE" in lines[4]
    assert lines[-1].startswith("factory agent | finished: completed |")
    assert lines[-1].endswith("provider time upper bound 0s (not an ETA)")


def test_live_line_on_a_terminal() -> None:
    out = TtyStream()
    obs = ProgressObserver("human", out, 600000)  # auto: a terminal gets the live line
    _play(obs, APPROVE_SCRIPT)
    obs.close(outcome="completed", exit_code=0)
    text = out.getvalue()
    assert "\x1b[" in text  # cursor control: a live region was drawn
    assert "upper bound 40m 00s (not an ETA)" in text
    assert "finished: completed" in text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0s"), (999, "0s"), (64000, "1m 04s"), (3723000, "1h 02m 03s"), (-5, "0s")],
)
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration_ms(ms) == text


async def test_live_line_is_refreshed_every_second_by_the_heartbeat(
    autojump_clock: trio.testing.MockClock,
) -> None:
    out = TtyStream()
    obs = ProgressObserver("human", out, 600000)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(obs.heartbeat)
        obs.stage("worker_running", remaining_invocations=4)
        await trio.sleep(3.5)
        nursery.cancel_scope.cancel()
    text = out.getvalue()
    for second in ("| 1s |", "| 2s |", "| 3s |"):
        assert second in text
    assert "still running" not in text  # the live line is refreshed, not logged

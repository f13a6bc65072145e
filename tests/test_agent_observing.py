"""The CLI wiring of progress and telemetry: refusal before effects, unwrapped errors."""

from __future__ import annotations

import io
import json
import threading

import pytest
import trio
import trio.testing

from factory.agent.observer import FanOut
from factory.agent.observing import make_observer, with_heartbeat
from factory.agent.progress import ProgressObserver
from factory.agent.telemetry import EndpointRefused, TelemetryObserver
from factory.errors import UsageError


def test_a_refused_endpoint_is_refused_before_any_thread_starts() -> None:
    before = threading.active_count()
    with pytest.raises(EndpointRefused):
        make_observer("jsonl", "http://localhost:4318", stream=io.StringIO(), timeout_ms=1000)
    assert threading.active_count() == before


def test_make_observer_negative_control_builds_both() -> None:
    observer, progress = make_observer(
        "human", "http://127.0.0.1:9", stream=io.StringIO(), timeout_ms=1000
    )
    assert isinstance(observer, FanOut) and isinstance(progress, ProgressObserver)
    kinds = {type(o) for o in observer._observers}
    assert kinds == {ProgressObserver, TelemetryObserver}
    observer.close(outcome="completed", exit_code=0)
    quiet, none = make_observer(None, None, stream=io.StringIO(), timeout_ms=1000)
    assert none is None and isinstance(quiet, FanOut)


async def test_with_heartbeat_beats_during_the_run_and_returns_its_value(
    autojump_clock: trio.testing.MockClock,
) -> None:
    out = io.StringIO()
    _, progress = make_observer("jsonl", None, stream=out, timeout_ms=1000)
    assert progress is not None

    async def slow_run(x: int) -> int:
        progress.stage("worker_running", remaining_invocations=4)
        await trio.sleep(25)
        return x * 2

    assert await with_heartbeat(progress, slow_run, 21) == 42
    events = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    assert events == ["stage", "heartbeat", "heartbeat"]


@pytest.mark.parametrize("exc", [UsageError("refused", code="x"), KeyboardInterrupt()])
async def test_errors_of_the_run_propagate_unwrapped(exc: BaseException) -> None:
    _, progress = make_observer("jsonl", None, stream=io.StringIO(), timeout_ms=1000)

    async def failing() -> None:
        await trio.lowlevel.checkpoint()
        raise exc

    with pytest.raises(type(exc)) as info:
        await with_heartbeat(progress, failing)
    assert info.value is exc


async def test_without_progress_the_run_is_just_awaited() -> None:
    async def run() -> str:
        return "done"

    assert await with_heartbeat(None, run) == "done"

"""Two runs on one worktree at once (observed before the fix: both were admitted while the
first worker was still starting, and each receipt bound the other run's edit as its own
candidate). One run holds the worktree; a second is refused with exit 2 before any effect."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.errors import ExitCode, FactoryError
from factory.provider_api import ProviderResult, Role, Route, Spool, SubscriptionRoute
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write
from tests.agent.helpers import request
from tests.support.layout import Layout


class GatedAgent(FakeAgent):
    """Writes its file, then waits until the test opens the gate."""

    def __init__(self, path: str, gate: trio.Event, started: trio.Event) -> None:
        super().__init__([Step(effect=write(path, f"{path}\n"))])
        self.gate, self.started = gate, started

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
        self.started.set()
        await self.gate.wait()
        return await super().run_agent(
            role=role, worktree=worktree, prompt=prompt, timeout_ms=timeout_ms, route=route
        )


async def test_a_second_run_on_a_busy_worktree_is_refused(layout: Layout) -> None:
    gate, started = trio.Event(), trio.Event()
    first = GatedAgent("first.txt", gate, started)
    second_agent = FakeAgent([Step(effect=write("second.txt", "second\n"))])
    second_receipt = layout.out / "second.json"
    outcome: list[RunOutcome] = []

    async def run_first() -> None:
        deps = AgentDeps(agent=first, reviewer=FakeReviewer([Step()]), route=SubscriptionRoute())
        outcome.append(await run_agent(request(layout), deps))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_first)
        await started.wait()  # the first run is admitted and its worker has started
        deps = AgentDeps(
            agent=second_agent, reviewer=FakeReviewer([Step()]), route=SubscriptionRoute()
        )
        with pytest.raises(FactoryError) as info:
            await run_agent(request(layout, receipt=second_receipt), deps)
        gate.set()
    assert info.value.code == "worktree-busy" and info.value.exit_code == ExitCode.USAGE
    assert second_agent.calls == [] and not os.path.lexists(second_receipt)
    assert not os.path.lexists(f"{second_receipt}.evidence")
    files = outcome[0].receipt.candidate.initial
    assert outcome[0].exit_code == 0 and files is not None
    assert [f.path for f in files.body.files] == ["first.txt"]


async def test_twin_runs_one_after_the_other_are_both_admitted(layout: Layout) -> None:
    deps = AgentDeps(
        agent=FakeAgent([Step(effect=write("first.txt"))]),
        reviewer=FakeReviewer([Step()]),
        route=SubscriptionRoute(),
    )
    assert (await run_agent(request(layout), deps)).exit_code == 0
    os.remove(layout.wt / "first.txt")  # clean again: the lock was released with the run
    deps = AgentDeps(
        agent=FakeAgent([Step(effect=write("second.txt"))]),
        reviewer=FakeReviewer([Step()]),
        route=SubscriptionRoute(),
    )
    outcome = await run_agent(request(layout, receipt=layout.out / "second.json"), deps)
    assert outcome.exit_code == 0


def test_the_cli_refuses_a_busy_worktree_with_exit_2(layout: Layout, tmp_path: Path) -> None:
    """Through the real CLI: the refusal raised inside the run's nursery keeps exit 2
    (observed before the fix: an ExceptionGroup, exit 1, 'internal error')."""
    import signal
    import subprocess
    import sys
    import time

    from tests.agent.cli_helpers import FAKE, agent_args

    marker = tmp_path / "holding"
    first = subprocess.Popen(
        [sys.executable, str(FAKE), "hold", str(marker), "--", *agent_args(layout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = layout.out / "second.json"
        # In-process fake profiles for the second run too: real ones would be refused by
        # the provider preflight (no login here) before the worktree is looked at.
        proc = subprocess.run(
            [sys.executable, str(FAKE), "approve", "--", "agent", "--worktree", str(layout.wt),
             "--task", "t", "--out", str(second)],
            capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert b"factory: worktree-busy:" in proc.stderr and proc.stdout == b""
        assert not os.path.lexists(second) and not os.path.lexists(f"{second}.evidence")
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 130

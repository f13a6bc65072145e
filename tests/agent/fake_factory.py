"""``python tests/agent/fake_factory.py SCENARIO -- factory args...``: the real CLI with
in-process fake profiles (the closed profiles are swapped at the one wiring point)."""

from __future__ import annotations

import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from factory.cli import agent_exec
from factory.cli.main import main
from factory.provider_api import ProviderResult
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


class SpawningAgent(FakeAgent):
    """A worker that starts a real child (``sleep``) and waits on it, like a provider."""

    async def run_agent(self, **kw: object) -> ProviderResult:
        wt = kw["worktree"]
        assert isinstance(wt, Path)
        FIX(wt)
        marker = Path(sys.argv[2])

        async def child(task_status: trio.TaskStatus[trio.Process]) -> None:
            await trio.run_process(["sleep", "60"], task_status=task_status)

        async with trio.open_nursery() as n:
            proc = await n.start(child)
            marker.write_text(str(proc.pid))
        raise AssertionError("unreachable: the child sleeps until cancelled")


class HoldingAgent(FakeAgent):
    """A worker that has changed nothing yet (like a CLI still starting) and waits."""

    async def run_agent(self, **kw: object) -> ProviderResult:
        Path(sys.argv[2]).write_text("holding")
        await trio.sleep_forever()
        raise AssertionError("unreachable")


class RouteDumpingAgent(FakeAgent):
    """Records what the run handed the profile (route, env it can see is the profile's job)."""

    async def run_agent(self, **kw: object) -> ProviderResult:
        Path(sys.argv[2]).write_text(repr(kw["route"]) + "\n" + repr(sorted(kw)))
        return await super().run_agent(**kw)  # type: ignore[arg-type]


#: A reviewer that wrote prose (and a hostile escape) instead of a verdict.
PROSE = b"Looks fine to me, ship it \x1b[2J<b>really</b>\n"

SCENARIOS = {
    "route-dump": lambda: (RouteDumpingAgent([Step(effect=FIX)]), FakeReviewer([Step()])),
    "approve": lambda: (FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()])),
    "reject": lambda: (
        FakeAgent([Step(effect=FIX), Step(effect=write("t.py", "x\n"))]),
        FakeReviewer([Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")]),
    ),
    "prose": lambda: (
        FakeAgent([Step(effect=FIX)]),
        FakeReviewer([Step(verdict=None, stdout=PROSE)]),
    ),
    "fail": lambda: (FakeAgent([Step()]), FakeReviewer([])),
    "spawn": lambda: (SpawningAgent([]), FakeReviewer([])),
    "hold": lambda: (HoldingAgent([]), FakeReviewer([])),
}

if __name__ == "__main__":
    name = sys.argv[1]
    rest = sys.argv[sys.argv.index("--") + 1 :]
    agent_exec.load_profiles = SCENARIOS[name]
    sys.exit(main(rest))

"""Run the agent cycle in-process with fake profiles."""

from __future__ import annotations

from dataclasses import dataclass, field

from factory.agent.admission import AgentRequest
from factory.agent.observer import NullObserver, RunObserver
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.provider_api import SubscriptionRoute
from tests.agent.conftest import Layout
from tests.agent.fakes import FakeAgent, FakeReviewer, Step


@dataclass
class Ran:
    outcome: RunOutcome
    agent: FakeAgent
    reviewer: FakeReviewer

    @property
    def agent_roles(self) -> list[str]:
        return [c.role for c in self.agent.calls]

    @property
    def provider_calls(self) -> int:
        return len(self.agent.calls) + len(self.reviewer.calls)


@dataclass
class Recorder:
    """An observer that records what it was told."""

    stages: list[tuple[str, int, str | None, str | None]] = field(default_factory=list)
    phases: list[tuple[str, str]] = field(default_factory=list)
    closed: list[tuple[str, int]] = field(default_factory=list)

    def stage(self, stage, *, remaining_invocations, verdict=None, outcome=None):  # type: ignore[no-untyped-def]
        self.stages.append((stage, remaining_invocations, verdict, outcome))

    def phase_started(self, phase):  # type: ignore[no-untyped-def]
        self.phases.append(("start", phase))

    def phase_ended(self, phase, *, outcome, duration_ms):  # type: ignore[no-untyped-def]
        self.phases.append(("end", f"{phase}:{outcome}"))

    def close(self, *, outcome, exit_code, error_code=None):  # type: ignore[no-untyped-def]
        self.closed.append((outcome, exit_code))


def request(layout: Layout, task: str = "fix add()", **kw: object) -> AgentRequest:
    fields: dict[str, object] = {"worktree": layout.wt, "task": task, "receipt": layout.receipt}
    fields.update(kw)
    return AgentRequest(**fields)  # type: ignore[arg-type]


async def run(
    layout: Layout,
    agent: list[Step],
    reviewer: list[Step],
    *,
    observer: RunObserver | None = None,
    task: str = "fix add()",
) -> Ran:
    a, r = FakeAgent(agent), FakeReviewer(reviewer)
    deps = AgentDeps(
        agent=a, reviewer=r, route=SubscriptionRoute(), observer=observer or NullObserver()
    )
    outcome = await run_agent(request(layout, task), deps)
    return Ran(outcome, a, r)

"""Admission checks shared by the agent tests: run the whole cycle and assert it was
refused before anything ran or was written, or admitted (SPEC A-1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.agent.admission import AgentRequest
from factory.agent.run import AgentDeps, run_agent
from factory.errors import ExitCode, FactoryError
from factory.provider_api import SubscriptionRoute
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


async def refused(req: AgentRequest, code: str) -> None:
    """Run the whole cycle; assert it is refused with ``code``, no provider, no file."""
    agent, reviewer = FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()])
    deps = AgentDeps(agent=agent, reviewer=reviewer, route=SubscriptionRoute())
    existed = os.path.lexists(req.receipt)
    evidence = req.evidence or Path(f"{req.receipt}.evidence")
    evidence_existed = os.path.lexists(evidence)
    with pytest.raises(FactoryError) as info:
        await run_agent(req, deps)
    assert info.value.code == code
    assert info.value.exit_code == ExitCode.USAGE
    assert agent.calls == [] and reviewer.calls == []
    assert os.path.lexists(req.receipt) == existed
    assert os.path.lexists(evidence) == evidence_existed


async def admitted(req: AgentRequest) -> None:
    agent, reviewer = FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()])
    deps = AgentDeps(agent=agent, reviewer=reviewer, route=SubscriptionRoute())
    outcome = await run_agent(req, deps)
    assert outcome.exit_code == 0 and len(agent.calls) == 1


def req(layout: Layout, **kw: object) -> AgentRequest:
    base: dict[str, object] = {
        "worktree": layout.wt,
        "task": "fix add()",
        "receipt": layout.receipt,
    }
    base.update(kw)
    return AgentRequest(**base)  # type: ignore[arg-type]

"""An agent run admits its worktree once and re-checks it once under the lock (issue 25).

The caller's admission (``factory agent`` admits before importing any provider) is passed
on to the run instead of being made again; the one further admission is the re-check
after the worktree's lock is taken — a time-of-check/time-of-use guard, whose twin shows
it is real: a worktree dirtied between the two is refused. The creating form locks the
worktree it created first and admits it once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from factory.agent import run as run_mod
from factory.agent.admission import admit
from factory.agent.creating import prepare
from factory.agent.run import AgentDeps, run_agent
from factory.errors import FactoryError
from factory.gitio.create import WorktreeSpec
from factory.provider_api import SubscriptionRoute
from tests.agent.creating_helpers import FIX, RUN_ID, draft
from tests.agent.fakes import FakeAgent, FakeReviewer, Step
from tests.agent.helpers import request
from tests.support.git import init_repo
from tests.support.layout import Layout


def counted(monkeypatch: pytest.MonkeyPatch, before: Callable[[], None] | None = None) -> list[int]:
    """Count the run's admissions (``before``: runs just before each, to change the world)."""
    calls: list[int] = []
    real = admit

    def admit_counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        if before is not None:
            before()
        return real(*args, **kw)

    monkeypatch.setattr(run_mod, "admit", admit_counted)
    return calls


def deps() -> AgentDeps:
    return AgentDeps(
        agent=FakeAgent([Step(effect=FIX)]),
        reviewer=FakeReviewer([Step()]),
        route=SubscriptionRoute(),
    )


async def test_the_callers_admission_is_passed_on_and_rechecked_once(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = request(layout)
    admitted = admit(req)  # the caller's (factory agent's) one admission
    calls = counted(monkeypatch)
    outcome = await run_agent(req, deps(), admitted=admitted)
    assert outcome.exit_code in (0, 3) and len(calls) == 1  # the re-check under the lock


async def test_without_a_callers_admission_the_run_admits_then_rechecks(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counted(monkeypatch)
    await run_agent(request(layout), deps())
    assert len(calls) == 2


async def test_the_recheck_is_real_a_worktree_dirtied_before_the_lock_is_refused(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = request(layout)
    admitted = admit(req)

    def dirty() -> None:
        (layout.wt / "late.txt").write_text("left behind\n")

    counted(monkeypatch, before=dirty)
    with pytest.raises(FactoryError) as caught:
        await run_agent(req, deps(), admitted=admitted)
    assert caught.value.code == "worktree-not-clean"
    assert not layout.receipt.exists()  # refused before anything was reserved


async def test_the_creating_form_admits_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    calls = counted(monkeypatch)
    d = AgentDeps(
        agent=FakeAgent([Step(effect=FIX)]), reviewer=FakeReviewer([Step()]),
        route=SubscriptionRoute(),
    )  # fmt: skip
    outcome = await run_agent(prelude.planned.request, d, prelude=prelude)
    assert outcome.exit_code == 0 and len(calls) == 1

"""An agent run admits its worktree once, under the worktree's lock (issue 25).

``factory agent`` takes the lock, admits (before importing any provider) and passes both
on (``held=True``): the run admits no more. Without a caller's admission the run takes the
lock first and admits once. An admission made *without* the lock is made again under it —
a time-of-check/time-of-use guard, whose twin shows it is real: a worktree dirtied
between the two is refused. The creating form locks the worktree it created first and
admits it once."""

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


async def test_without_a_callers_admission_the_run_locks_then_admits_once(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from factory.agent.admission import hold_worktree
    from factory.gitio.worktree import locate

    held: list[bool] = []

    def busy_probe() -> None:  # is the lock taken when the admission runs?
        try:
            with hold_worktree(locate(layout.wt)):
                held.append(False)
        except FactoryError as exc:
            held.append(exc.code == "worktree-busy")

    calls = counted(monkeypatch, before=busy_probe)
    outcome = await run_agent(request(layout), deps())
    assert outcome.exit_code in (0, 3) and len(calls) == 1 and held == [True]


async def test_an_admission_under_the_callers_lock_is_not_made_again(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from factory.agent.admission import hold_worktree

    req = request(layout)
    admitted = admit(req)
    calls = counted(monkeypatch)
    with hold_worktree(admitted.worktree):  # as factory agent holds it
        outcome = await run_agent(req, deps(), admitted=admitted, held=True)
    assert outcome.exit_code in (0, 3) and calls == []


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

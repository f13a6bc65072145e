"""Runs on one repository do not interfere (SPEC M-2): another factory run's new branch
and worktree registration are not a mutation of this run; every other change still is.

Observed before: with ``--repo`` on one repository, 3 of 28 parallel runs failed
``worker-git-mutation`` because each saw the others' new branches and registrations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from factory.agent.creating import create_registered, prepare
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.gitio.create import WorktreeSpec, plan_worktree
from factory.provider_api import SubscriptionRoute
from factory.runs.registry import (
    RunProcess,
    RunRecord,
    foreign_labels,
    is_foreign,
    list_runs,
    registry_label,
    reserve_run,
)
from tests.agent.creating_helpers import FIX, draft
from tests.agent.fakes import FakeAgent, FakeReviewer, Step
from tests.support.git import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", {"src/app.py": "def add(a, b):\n    return a - b\n"})


def _deps(worker: Step, reviewer: Step | None = None) -> AgentDeps:
    return AgentDeps(
        agent=FakeAgent([worker]),
        reviewer=FakeReviewer([reviewer or Step()]),
        route=SubscriptionRoute(),
    )


async def _run(
    tmp: Path, repo: Path, name: str, worker: Step, reviewer: Step | None = None
) -> RunOutcome:
    out = tmp / name
    out.mkdir()
    prelude = prepare(WorktreeSpec(repo), draft(out, repo))
    return await run_agent(prelude.planned.request, _deps(worker, reviewer), prelude=prelude)


def _another_run(tmp: Path, repo: Path, name: str) -> None:
    """Another factory run of the same repository creates its branch and worktree now."""
    plan = plan_worktree(WorktreeSpec(repo))
    (tmp / name).mkdir()
    create_registered(plan, tmp / name / "receipt.json")


async def test_another_runs_creation_during_each_phase_is_not_a_mutation(
    tmp_path: Path, repo: Path
) -> None:
    def worker(wt: Path) -> None:
        FIX(wt)
        _another_run(tmp_path, repo, "during-worker")

    def reviewer(wt: Path) -> None:
        _another_run(tmp_path, repo, "during-review")

    outcome = await _run(tmp_path, repo, "me", Step(effect=worker), Step(effect=reviewer))
    assert outcome.exit_code == 0, outcome.receipt.error
    assert len(list_runs(repo / ".git")) == 3


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(lambda r: git(r, "branch", "stray"), id="a branch outside the registry"),
        pytest.param(
            lambda r: git(r, "branch", "factory/run-0000ffff"), id="a factory-named branch"
        ),
        pytest.param(
            lambda r: (r / ".git" / "factory" / "runs" / "notes.txt").write_text("x"),
            id="another file in the registry folder",
        ),
    ],
)
async def test_every_other_change_is_still_a_mutation(
    tmp_path: Path, repo: Path, mutation: object
) -> None:
    def worker(wt: Path) -> None:
        FIX(wt)
        mutation(repo)  # type: ignore[operator]

    outcome = await _run(tmp_path, repo, "me", Step(effect=worker))
    assert outcome.exit_code == 4
    assert outcome.receipt.error is not None
    assert outcome.receipt.error.code == "worker-git-mutation"


async def test_a_record_of_a_dead_creator_exempts_nothing(tmp_path: Path, repo: Path) -> None:
    """A record whose process is gone and which never ended vouches for nothing: a branch
    it names, made during the phase, is a mutation (the negative twin of the first test)."""

    def worker(wt: Path) -> None:
        FIX(wt)
        reserve_run(
            repo / ".git",
            RunRecord(
                run_id="00ff00ff00ff",
                worktree=str(tmp_path / "nowhere"),
                branch="factory/run-00ff00ff00ff",
                base_commit="0" * 40,
                receipt=str(tmp_path / "r.json"),
                created_at="2026-01-01T00:00:00.000Z",
                process=RunProcess(pid=1, start_ticks=1, boot_id="not-this-boot"),
            ),
        )
        git(repo, "branch", "factory/run-00ff00ff00ff")

    outcome = await _run(tmp_path, repo, "me", Step(effect=worker))
    assert outcome.exit_code == 4


def _mutations(outcome: RunOutcome) -> list[str]:
    """The paths a failed run recorded as mutated (its mutation-paths evidence)."""
    folder = Path(outcome.receipt.evidence_dir)
    found: list[str] = []
    for item in sorted(folder.glob("*mutation-paths*")):
        found += [p.decode("utf-8", "replace") for p in item.read_bytes().split(b"\0") if p]
    return found


async def test_eight_runs_at_once_twenty_times(tmp_path: Path, repo: Path) -> None:
    for round_ in range(20):
        outcomes: list[RunOutcome] = []

        async def one(name: str, into: list[RunOutcome]) -> None:
            into.append(await _run(tmp_path, repo, name, Step(effect=FIX)))

        async with trio.open_nursery() as nursery:
            for i in range(8):
                nursery.start_soon(one, f"r{round_}-{i}", outcomes)
        failed = [(o.receipt.error, _mutations(o)) for o in outcomes if o.exit_code != 0]
        assert failed == [], f"round {round_}: {failed}"
    assert len(list_runs(repo / ".git")) == 160


def test_labels_of_another_run_and_never_of_ones_own(tmp_path: Path, repo: Path) -> None:
    common = repo / ".git"
    plan = plan_worktree(WorktreeSpec(repo))
    (tmp_path / "o").mkdir()
    create_registered(plan, tmp_path / "o" / "receipt.json")
    mine = foreign_labels(common, None, tmp_path / "elsewhere")
    assert f"common-dir/refs/heads/{plan.branch}".encode() in mine
    assert any(label.startswith(b"common-dir/worktrees/") for label in mine)
    assert foreign_labels(common, None, plan.path) == set()  # one's own is never foreign
    assert is_foreign(b"common-dir/refs/heads/factory", mine)  # the folder above
    assert is_foreign(f"common-dir/refs/heads/{plan.branch}.lock".encode(), mine)
    assert not is_foreign(b"common-dir/refs/heads/main", mine)
    assert not is_foreign(b"common-dir/refs/heads/main.lock", mine)
    assert registry_label(b"common-dir/factory/runs/" + plan.run_id.encode() + b".json")
    assert not registry_label(b"common-dir/factory/runs/notes.txt")
    record = json.loads((common / "factory" / "runs" / f"{plan.run_id}.json").read_text())
    assert record["schema"] == "factory.run-record/1" and record["branch"] == plan.branch

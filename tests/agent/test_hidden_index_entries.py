"""Index entries marked assume-unchanged or skip-worktree hide changes from git status and
from ``git add -A`` (the candidate tree). Observed before this fix: a worker's edit of such
a file was in the worktree but in no status, patch or identity, and the run completed."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.agent.verify import verify_json as verify
from tests.agent.admission_checks import admitted, refused, req
from tests.agent.fakes import Step, chain, write
from tests.agent.helpers import run
from tests.support.git import git
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
async def test_a_worktree_whose_index_hides_a_dirty_file_is_refused(
    layout: Layout, flag: str
) -> None:
    git(layout.wt, "update-index", flag, "README.md")
    (layout.wt / "README.md").write_text("hidden dirt\n")
    assert git(layout.wt, "status", "--porcelain") == ""  # git itself calls this clean
    await refused(req(layout), "worktree-hides-changes")


async def test_twin_clearing_the_bit_shows_the_dirt_and_a_clean_file_is_admitted(
    layout: Layout,
) -> None:
    git(layout.wt, "update-index", "--assume-unchanged", "README.md")
    git(layout.wt, "update-index", "--no-assume-unchanged", "README.md")
    await admitted(req(layout))


async def test_a_worker_that_hides_its_own_edit_fails_instead_of_completing(
    layout: Layout,
) -> None:
    """Setting the bit is itself an index change, so a git mutation (no reviewer runs)."""

    def hide(wt: Path) -> None:
        git(wt, "update-index", "--assume-unchanged", "README.md")
        (wt / "README.md").write_text("unbound edit\n")

    ran = await run(layout, [Step(effect=chain(FIX, hide))], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "worker-git-mutation"
    assert ran.reviewer.calls == []  # nothing unbound is ever reviewed
    assert verify(layout.receipt)["ok"] is True  # a consistent record of a failed run

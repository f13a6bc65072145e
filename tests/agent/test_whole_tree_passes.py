"""How many times one agent run visits the whole tree (issue 25, "Speed"): counted, not
timed (tests/support/passes.py says what a pass is), over a full four-call cycle (worker →
REQUEST_CHANGES → repair → APPROVE). The count is independent of the tree's size, so a
small repository shows it; ``scripts/bench_agent --only passes`` reports the same count
beside the timings on large ones.

The issue's target is at most 4 passes; this test holds the ceiling reached so far
(:data:`CEILING`) so the count can only go down, and the index entries read once."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from tests.agent.fakes import Step, write
from tests.agent.helpers import run
from tests.support.layout import Layout
from tests.support.passes import counting_passes

CEILING = 18  # passes of one four-call cycle now (36, 32, 30, 27, 23, 22 before; target: 4)


def _cycle(layout: Layout) -> tuple[int, dict[str, int]]:
    agent = [Step(effect=write("src/a.txt", "one\n")), Step(effect=write("src/a.txt", "two\n"))]
    reviewer = [Step(verdict="REQUEST_CHANGES"), Step(verdict="APPROVE")]
    with counting_passes() as seen:
        ran = trio.run(run, layout, agent, reviewer)
    assert ran.outcome.exit_code == 0 and len(ran.outcome.receipt.phases) == 4
    return sum(seen.values()), dict(seen)


def test_an_agent_cycle_stays_within_the_pass_ceiling(layout: Layout) -> None:
    total, seen = _cycle(layout)
    assert total <= CEILING, seen
    # the index entries are read once, by the admission: the entry and later checks reuse
    # the read while the git directories' binding shows the index files unchanged, and the
    # derivations take their listing from it and their own status (no ``git ls-files``)
    assert seen["git ls-files --debug"] == 1 and seen["walk worktree"] == 4, seen
    assert "git ls-files" not in seen, seen
    # each snapshot reads its listed paths and finds the special files in one walk; only
    # the entry's baseline lstats every path and only admission walks for special files
    assert seen["walk and read listed paths"] == 4, seen
    assert seen["lstat listed paths"] == 1 and seen["walk special files"] == 1, seen


def test_a_staged_change_is_still_read_and_seen(layout: Layout) -> None:
    """Negative control of the reuse: a worker that stages its change rewrites the index
    files, so the entries are read again and the change is refused as a staging."""
    from tests.support.git import git

    def stage(wt: Path) -> None:
        (wt / "src").mkdir(exist_ok=True)
        (wt / "src" / "a.txt").write_text("staged\n")
        git(wt, "add", "src/a.txt")

    with counting_passes() as seen:
        ran = trio.run(run, layout, [Step(effect=stage)], [])
    error = ran.outcome.receipt.error
    assert ran.outcome.exit_code == 4 and error is not None, error
    assert error.code == "worker-git-mutation", error
    assert seen["git ls-files --debug"] == 2, seen


async def test_an_index_written_after_the_admission_is_read_again(layout: Layout) -> None:
    """Twin of the admission's read being reused at entry: an index rewritten between the
    admission and the run (its stat data refreshed: same entries, new bytes) is read
    again, and the run goes on as usual."""
    from factory.agent.admission import admit, hold_worktree
    from factory.agent.run import AgentDeps, run_agent
    from factory.provider_api import SubscriptionRoute
    from tests.agent.fakes import FakeAgent, FakeReviewer
    from tests.agent.helpers import request
    from tests.support.git import git

    req = request(layout)
    admitted = admit(req)
    index = git(layout.wt, "rev-parse", "--git-path", "index").strip()
    before = (layout.wt / index).read_bytes()
    os.utime(layout.wt / "README.md", (1_000_000_000, 1_000_000_000))  # other stat data
    git(layout.wt, "update-index", "--refresh")
    assert (layout.wt / index).read_bytes() != before  # the index was rewritten
    deps = AgentDeps(
        agent=FakeAgent([Step(effect=write("src/a.txt", "one\n"))]),
        reviewer=FakeReviewer([Step(verdict="APPROVE")]),
        route=SubscriptionRoute(),
    )
    with counting_passes() as seen, hold_worktree(admitted.worktree):
        outcome = await run_agent(req, deps, admitted=admitted, held=True)
    assert outcome.exit_code == 0, outcome.receipt.error
    assert seen["git ls-files --debug"] == 1, seen  # the entry's own read (none by admission)

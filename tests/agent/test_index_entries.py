"""Index changes that leave ``git write-tree``'s tree alone are git mutations too (issue 8 §1).

Observed before: the editors' index was compared by the tree ``git write-tree`` builds,
which leaves out intent-to-add entries and ignores the assume-unchanged and skip-worktree
bits, so a worker's ``git add -N`` was reviewed as if it had only edited files. Each row is
one index-only change by a worker (never reviewed), a repair, or a reviewer; the twins
only edit files, or only refresh the index's stat data.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.gitio.index_entries import MEANINGFUL_FLAGS, index_entries_digest, parse_entries
from tests.agent.fakes import Step, chain, write
from tests.agent.git_state import evidence_paths, git_status_refreshing_the_index
from tests.agent.helpers import run
from tests.support.git import git
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
NEW = write("src/new.py", "x = 1\n")
Plant = Callable[[Path], object]


def git_in(*args: str) -> Plant:
    return lambda wt: git(wt, *args)


INDEX_ONLY: dict[str, Plant] = {
    "intent-to-add": chain(NEW, git_in("add", "-N", "src/new.py")),
    "intent-to-add-empty": chain(write("empty.txt", ""), git_in("add", "-N", "empty.txt")),
    "assume-unchanged": git_in("update-index", "--assume-unchanged", "README.md"),
    "skip-worktree": git_in("update-index", "--skip-worktree", "README.md"),
    "chmod-staged": git_in("update-index", "--chmod=+x", "README.md"),
    "staged-edit": git_in("add", "src/app.py"),
}


@pytest.mark.parametrize("row", sorted(INDEX_ONLY))
async def test_a_worker_changing_only_the_index_is_never_reviewed(layout: Layout, row: str) -> None:
    ran = await run(layout, [Step(effect=chain(FIX, INDEX_ONLY[row]))], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "worker-git-mutation"
    assert ran.reviewer.calls == []
    assert evidence_paths(layout, r.phases[0]) == ["git-dir/index"]


async def test_twin_a_worker_only_editing_and_adding_files_is_reviewed(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=chain(FIX, NEW, write("empty.txt", "")))], [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error
    assert len(ran.reviewer.calls) == 1


async def test_twin_a_worker_refreshing_stat_data_after_an_edit_is_reviewed(
    layout: Layout,
) -> None:
    ran = await run(
        layout, [Step(effect=chain(FIX, NEW, git_status_refreshing_the_index))], [Step()]
    )
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


async def test_a_repair_adding_intent_to_add_fails_without_a_second_review(
    layout: Layout,
) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=INDEX_ONLY["intent-to-add"])],
        [Step(verdict="REQUEST_CHANGES"), Step()],
    )
    r = ran.outcome.receipt
    assert r.error is not None and r.error.code == "repair-git-mutation"
    assert len(ran.reviewer.calls) == 1


@pytest.mark.parametrize("row", ["intent-to-add", "assume-unchanged", "skip-worktree"])
async def test_a_reviewer_changing_only_the_index_gets_its_mutation_outcome(
    layout: Layout, row: str
) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=INDEX_ONLY[row])])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status, r.verdict) == (4, "failed", None)
    assert r.error is not None and r.error.code == "reviewer-mutation"
    assert "git-dir/index" in evidence_paths(layout, r.phases[-1])


def test_the_digest_tells_intent_to_add_from_a_staged_empty_file(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "e").write_text("")
    git(tmp_path, "add", "-N", "e")
    ita = index_entries_digest(tmp_path)
    git(tmp_path, "add", "e")  # the same path, mode and (empty blob) id: only the flag differs
    assert index_entries_digest(tmp_path) != ita
    git(tmp_path, "update-index", "--assume-unchanged", "e")
    hidden = index_entries_digest(tmp_path)
    git(tmp_path, "update-index", "--no-assume-unchanged", "e")
    assert index_entries_digest(tmp_path) not in (ita, hidden)


def test_twin_stat_data_and_bookkeeping_bits_do_not_count() -> None:
    def record(flags: str, ctime: str) -> bytes:
        return (
            b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tp\0"
            b"  ctime: " + ctime.encode() + b":0\n  mtime: 1:0\n  dev: 1\tino: 2\n"
            b"  uid: 0\tgid: 0\n  size: 0\tflags: " + flags.encode() + b"\n"
        )

    plain, refreshed = parse_entries(record("0", "1")), parse_entries(record("40000", "9"))
    assert plain == refreshed and len(plain) == 1  # CE_UPTODATE (1 << 18) is in-memory only
    assert parse_entries(record("20004000", "1"))[0][4] == 0x20000000 & MEANINGFUL_FLAGS


async def test_a_reviewers_plain_git_diff_refreshing_stat_data_is_not_a_mutation(
    layout: Layout,
) -> None:
    """Observed before (issue 24 §1): the worker touched a tracked file without changing
    it, the reviewer's read-only ``git status``/``git diff`` rewrote the index's stat cache,
    and the review was void as ``reviewer-mutation``. The twins above (intent-to-add,
    assume-unchanged, skip-worktree by the reviewer) still are mutations."""
    touch = chain(FIX, lambda wt: os.utime(wt / "README.md", (1, 1)))
    ran = await run(layout, [Step(effect=touch)], [Step(effect=git_status_refreshing_the_index)])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 0, r.error
    assert (r.status, r.verdict) == ("completed", "APPROVE")


async def test_twin_a_reviewer_staging_a_file_is_still_a_mutation(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=INDEX_ONLY["staged-edit"])])
    r = ran.outcome.receipt
    assert r.error is not None and r.error.code == "reviewer-mutation"
    assert "git-dir/index" in evidence_paths(layout, r.phases[-1])

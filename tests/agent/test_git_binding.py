"""The git directories are bound by exclusion, for the reviewer and the worker (issue 8 §1).

Observed before: a reviewer that wrote a commit id into ``MERGE_HEAD`` in the worktree's
git dir got APPROVE, and the user's next ``git commit`` became a merge with a parent the
reviewer chose; a worker could edit ``.git/config`` or add a hook and still be reviewed.
Each row writes one thing git keeps in its directories; twins write only what is left out
(object storage, other checkouts' index refreshes) or what the editors may change (their
own index, refreshed by their own ``git status``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.agent.receipt import AgentReceipt
from tests.agent.fakes import Step, chain, write
from tests.agent.git_state import evidence_paths, git_dir, git_status_refreshing_the_index
from tests.agent.helpers import run
from tests.gitio.plant import common_dir
from tests.support.cli import run_factory
from tests.support.git import add_linked_worktree, git
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
Plant = Callable[[Path], object]


def head(wt: Path) -> str:
    return git(wt, "rev-parse", "HEAD").strip()


def in_git_dir(rel: str, text: str | None = None) -> Plant:
    def plant(wt: Path) -> None:
        p = git_dir(wt) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text if text is not None else head(wt) + "\n")

    return plant


def in_common(rel: str, text: str = "x\n") -> Plant:
    def plant(wt: Path) -> None:
        p = common_dir(wt) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    return plant


def config(*kv: str) -> Plant:
    return lambda wt: git(wt, "config", *kv)


# row → (what the reviewer or worker does, the label(s) the evidence must list)
MUTATIONS: dict[str, tuple[Plant, list[str]]] = {
    "merge-head": (in_git_dir("MERGE_HEAD"), ["git-dir/MERGE_HEAD"]),
    "cherry-pick-head": (in_git_dir("CHERRY_PICK_HEAD"), ["git-dir/CHERRY_PICK_HEAD"]),
    "revert-head": (in_git_dir("REVERT_HEAD"), ["git-dir/REVERT_HEAD"]),
    "rebase-state": (
        in_git_dir("rebase-merge/head-name", "refs/heads/work\n"),
        ["git-dir/rebase-merge", "git-dir/rebase-merge/head-name"],
    ),
    "sequencer": (
        in_git_dir("sequencer/todo", "pick 0000000 x\n"),
        ["git-dir/sequencer", "git-dir/sequencer/todo"],
    ),
    "bisect": (in_git_dir("BISECT_LOG", "git bisect start\n"), ["git-dir/BISECT_LOG"]),
    "orig-head": (in_git_dir("ORIG_HEAD", "0" * 40 + "\n"), ["git-dir/ORIG_HEAD"]),
    "index-lock-left": (in_git_dir("index.lock", "DIRC"), ["git-dir/index.lock"]),
    "head-lock-left": (in_git_dir("HEAD.lock", "ref: refs/heads/x\n"), ["git-dir/HEAD.lock"]),
    "per-worktree-config": (
        in_git_dir("config.worktree", "[core]\n\tsparseCheckout = true\n"),
        ["git-dir/config.worktree"],
    ),
    "sparse-checkout": (
        in_git_dir("info/sparse-checkout", "/src/\n"),
        ["git-dir/info", "git-dir/info/sparse-checkout"],
    ),
    "shared-config-filter": (
        config("filter.x.clean", "rm -rf ~"),
        ["common-dir/config"],
    ),
    "shared-config-hooks-path": (config("core.hooksPath", "/tmp/elsewhere"), ["common-dir/config"]),
    "shared-config-alias": (config("alias.st", "!rm -rf ~"), ["common-dir/config"]),
    "hook": (in_common("hooks/pre-commit", "#!/bin/sh\n"), ["common-dir/hooks/pre-commit"]),
    "info-attributes": (
        in_common("info/attributes", "* filter=x\n"),
        ["common-dir/info/attributes"],
    ),
    "grafts": (in_common("info/grafts", "0" * 40 + "\n"), ["common-dir/info/grafts"]),
    "replace-ref": (
        lambda wt: git(wt, "update-ref", "refs/replace/" + head(wt), head(wt)),
        ["common-dir/refs/replace", "common-dir/refs/replace/"],
    ),
    "packed-refs": (lambda wt: git(wt, "pack-refs", "--all"), ["common-dir/packed-refs"]),
    "shallow": (in_common("shallow", "0" * 40 + "\n"), ["common-dir/shallow"]),
    "alternates": (
        in_common("objects/info/alternates", "/tmp/other/objects\n"),
        ["common-dir/objects/info/alternates"],
    ),
    "primary-merge-head": (in_common("MERGE_HEAD"), ["common-dir/MERGE_HEAD"]),
    "unknown-new-file": (in_common("SOMETHING_NEW"), ["common-dir/SOMETHING_NEW"]),
    "submodule-repo-config": (
        in_common("modules/m/config", "[core]\n\tfsmonitor = /tmp/x\n"),
        ["common-dir/modules", "common-dir/modules/m", "common-dir/modules/m/config"],
    ),
    "rerere": (in_common("rr-cache/abc/preimage"), ["common-dir/rr-cache"]),
    "dot-git-file": (
        lambda wt: (wt / ".git").write_text((wt / ".git").read_text() + "\n"),
        ["worktree/.git"],
    ),
}


def matches(found: list[str], wanted: list[str]) -> bool:
    """Every wanted label is listed (a trailing ``/`` wants any label below it)."""
    return all(
        any(f.startswith(w) for f in found) if w.endswith("/") else w in found for w in wanted
    )


@pytest.mark.parametrize("row", sorted(MUTATIONS))
async def test_a_reviewer_writing_git_state_is_caught_and_the_paths_kept(
    layout: Layout, row: str
) -> None:
    plant, wanted = MUTATIONS[row]
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=plant, verdict="APPROVE")])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status, r.verdict) == (4, "failed", None)
    assert r.error is not None and r.error.code == "reviewer-mutation"
    assert "/" not in r.error.message.replace("reset the worktree", "")  # no paths in it
    found = evidence_paths(layout, r.phases[-1])
    assert found == sorted(found) and matches(found, wanted), found


@pytest.mark.parametrize("row", sorted(MUTATIONS))
async def test_a_worker_writing_git_state_is_never_reviewed(layout: Layout, row: str) -> None:
    plant, wanted = MUTATIONS[row]
    ran = await run(layout, [Step(effect=chain(FIX, plant))], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "worker-git-mutation"
    assert ran.reviewer.calls == []
    assert matches(evidence_paths(layout, r.phases[0]), wanted)


async def test_a_repair_adding_a_hook_fails_without_a_second_review(layout: Layout) -> None:
    plant, _ = MUTATIONS["hook"]
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=chain(write("tests/t.py", "x = 1\n"), plant))],
        [Step(verdict="REQUEST_CHANGES"), Step()],
    )
    r = ran.outcome.receipt
    assert r.error is not None and r.error.code == "repair-git-mutation"
    assert len(ran.reviewer.calls) == 1
    assert matches(evidence_paths(layout, r.phases[-1]), ["common-dir/hooks/pre-commit"])


async def test_twin_a_worker_refreshing_its_own_index_is_reviewed(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=chain(FIX, git_status_refreshing_the_index))], [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


def new_object(wt: Path) -> None:
    subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=wt, input=b"blob\n", check=True)


def other_checkouts_index(layout: Layout) -> Plant:
    def plant(wt: Path) -> None:
        for checkout in (layout.repo, layout.repo.parent / "wt2"):
            os.utime(checkout / "README.md")
            subprocess.run(["git", "status"], cwd=checkout, capture_output=True, check=True)

    return plant


def store_files(wt: Path) -> None:
    common = common_dir(wt)
    for rel in ("lfs/objects/ab/cd/abcd", "fsmonitor--daemon/cookies/1", "objects/pack/x.keep"):
        (common / rel).parent.mkdir(parents=True, exist_ok=True)
        (common / rel).write_text("left out\n")


async def test_twin_what_is_left_out_does_not_void_a_review(layout: Layout) -> None:
    add_linked_worktree(layout.repo, layout.repo.parent / "wt2", "other")
    unbound = chain(new_object, other_checkouts_index(layout), store_files)
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=unbound)])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


async def test_the_reviewer_may_refresh_its_own_index_stat_data(layout: Layout) -> None:
    """Issue 24 §1: the reviewer's index is judged by its entries, as the editors' is; a
    read that refreshes the stat cache is not a mutation (its twins, a reviewer changing an
    entry, are in test_index_entries.py and test_review_isolation.py)."""
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=git_status_refreshing_the_index)])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 0 and r.verdict == "APPROVE", r.error


async def test_worktree_paths_and_identity_only_changes_are_kept_too(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=write("ignored.log", "rewritten"))])
    r = ran.outcome.receipt
    assert r.error is not None and r.error.code == "reviewer-mutation"
    assert evidence_paths(layout, r.phases[-1]) == ["worktree/ignored.log"]


async def test_receipt_show_lists_the_changed_paths(layout: Layout) -> None:
    plant, _ = MUTATIONS["merge-head"]
    await run(layout, [Step(effect=FIX)], [Step(effect=plant)])
    proc = run_factory(["receipt", "show", str(layout.receipt)])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "paths changed where a phase must not change them" in out and "git-dir/MERGE_HEAD" in out
    receipt = AgentReceipt.model_validate_json(layout.receipt.read_bytes())
    assert receipt.error is not None and receipt.error.code == "reviewer-mutation"


async def test_twin_receipt_show_of_a_clean_run_lists_no_changed_paths(layout: Layout) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    proc = run_factory(["receipt", "show", str(layout.receipt)])
    assert (
        proc.returncode == 0
        and b"paths changed where a phase must not change them" not in proc.stdout
    )

"""Reviewer isolation (SPEC A-5): any write during review voids it; bad verdicts are typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.agent.receipt import AgentReceipt
from tests.agent.fakes import Effect, Step, write
from tests.agent.helpers import run
from tests.support.git import git
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


def common_dir(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def git_dir(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip())


def append_config(wt: Path) -> None:
    with (common_dir(wt) / "config").open("a") as fh:
        fh.write("[core]\n\tpager = cat\n")


def add_hook(wt: Path) -> None:
    hook = common_dir(wt) / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 0\n")


def touch_worktree_gitdir(wt: Path) -> None:
    (git_dir(wt) / "config.worktree").write_text("[core]\n\tbare = false\n")


def stage(wt: Path) -> None:
    git(wt, "add", "-A")


def chmod_file(wt: Path) -> None:
    (wt / "README.md").chmod(0o755)


def new_ref(wt: Path) -> None:
    git(wt, "update-ref", "refs/heads/sneaky", "HEAD")


def rewrite_index_same_tree(wt: Path) -> None:
    # Same entries, different index file bytes (format v4): not a change of the candidate,
    # its tree or HEAD; the index is judged by its entries (issue 24 §1).
    git(wt, "update-index", "--index-version", "4")


async def test_an_index_rewritten_with_the_same_entries_is_not_a_mutation(
    layout: Layout,
) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=rewrite_index_same_tree)])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


MUTATIONS: dict[str, Effect] = {
    "ignored-file": write("ignored.log", "rewritten by the reviewer\n"),
    "new-ignored-file": write("build/cache.bin", "x"),
    "node-modules-file": write("node_modules/dep/index.js", "module.exports = 2;\n"),
    "new-node-modules-file": write("node_modules/evil.js", "1"),
    "git-hook": add_hook,
    "git-config": append_config,
    "worktree-gitdir-file": touch_worktree_gitdir,
    "index": stage,
    "candidate-file": write("src/app.py", "def add(a, b):\n    return b + a\n"),
    "mode-only": chmod_file,
    "ref": new_ref,
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
async def test_reviewer_mutation_is_caught(layout: Layout, name: str) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=MUTATIONS[name], verdict="APPROVE")])
    assert ran.outcome.exit_code == 4, name
    r = AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))
    assert r.status == "failed" and r.error and r.error.code == "reviewer-mutation"
    assert r.verdict is None  # an approval from a mutating reviewer is never recorded
    assert r.phases[-1].binding is not None and r.phases[-1].binding.entries > 0


async def test_negative_control_reviewer_that_only_reads(layout: Layout) -> None:
    def read_everything(wt: Path) -> None:
        for p in wt.rglob("*"):
            if p.is_file() and ".git" not in p.parts:
                p.read_bytes()
        git(wt, "--no-optional-locks", "status", "--porcelain")
        git(wt, "log", "--oneline")

    ran = await run(layout, [Step(effect=FIX)], [Step(effect=read_everything)])
    assert ran.outcome.exit_code == 0


async def test_mutation_is_caught_even_when_the_reviewer_then_fails(layout: Layout) -> None:
    ran = await run(
        layout, [Step(effect=FIX)], [Step(effect=append_config, fail_code="provider-protocol")]
    )
    assert ran.outcome.exit_code == 4
    assert ran.outcome.receipt.error and ran.outcome.receipt.error.code == "reviewer-mutation"


@pytest.mark.parametrize(
    "step",
    [Step(verdict=None), Step(verdict="LGTM"), Step(fail_code="provider-protocol")],
    ids=["prose", "bad-verdict", "schema-violation"],
)
async def test_reviewer_protocol(layout: Layout, step: Step) -> None:
    ran = await run(layout, [Step(effect=FIX)], [step])
    assert ran.outcome.exit_code == 4 and len(ran.agent.calls) == 1  # no repair
    r = ran.outcome.receipt
    assert r.status == "failed" and r.error and r.error.code == "reviewer-protocol"


async def test_final_reviewer_protocol_is_a_failure_not_a_rejection(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=write("tests/t.py", "x = 1\n"))],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="MAYBE")],
    )
    assert ran.outcome.exit_code == 4 and ran.provider_calls == 4
    assert ran.outcome.receipt.error and ran.outcome.receipt.error.code == "reviewer-protocol"


async def test_final_reviewer_mutation(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=write("tests/t.py", "x = 1\n"))],
        [Step(verdict="REQUEST_CHANGES"), Step(effect=write("ignored.log", "y"))],
    )
    assert ran.outcome.exit_code == 4
    assert ran.outcome.receipt.error and ran.outcome.receipt.error.code == "reviewer-mutation"

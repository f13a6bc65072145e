"""A worker's edit inside a submodule is in no superproject tree or patch, so it cannot be
bound (SPEC A-4). Observed before the fix: the run completed with only the top-level file
in the candidate while the reviewer judged a worktree with the unbound submodule edit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from factory.gitio.candidate import submodule_changed
from tests.agent.fakes import Step, chain, write
from tests.agent.git_state import evidence_paths
from tests.agent.helpers import run
from tests.support.git import add_linked_worktree, git, init_repo
from tests.support.layout import Layout


@pytest.fixture
def with_submodule(tmp_path: Path) -> Layout:
    sub = init_repo(tmp_path / "subsrc", {"s.txt": "s\n"})
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(repo, "commit", "-qm", "add a submodule")
    wt = add_linked_worktree(repo, tmp_path / "wt")
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    out = tmp_path / "out"
    out.mkdir()
    return Layout(repo, wt, out)


async def test_an_edit_inside_a_submodule_fails_as_unsupported(with_submodule: Layout) -> None:
    edit = chain(write("a.txt", "A\n"), write("mod/s.txt", "unbound\n"))
    ran = await run(with_submodule, [Step(effect=edit)], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "unsupported-changed-path"
    assert ran.reviewer.calls == []


async def test_twin_a_top_level_edit_next_to_a_clean_submodule_completes(
    with_submodule: Layout,
) -> None:
    ran = await run(with_submodule, [Step(effect=write("a.txt", "A\n"))], [Step()])
    r = ran.outcome.receipt
    assert ran.outcome.exit_code == 0 and r.candidate.initial is not None
    assert [f.path for f in r.candidate.initial.body.files] == ["a.txt"]


def test_the_status_parser_reads_only_the_sub_field() -> None:
    z = "0" * 40
    plain = f"1 .M N... 100644 100644 100644 {z} {z} S.M. is a name".encode()
    sub = f"1 .M S.M. 160000 160000 160000 {z} {z} mod".encode()
    renamed = f"2 R. N... 100644 100644 100644 {z} {z} R100 new".encode() + b"\0" + b"1 .M S"
    assert not submodule_changed(plain + b"\0")
    assert submodule_changed(sub + b"\0")
    assert not submodule_changed(renamed + b"\0")  # the original path record is skipped
    assert not submodule_changed(b"? 1 .M S.M. x\0")


async def test_a_dirty_submodule_is_refused_at_admission(with_submodule: Layout) -> None:
    from tests.agent.admission_checks import admitted, refused, req

    (with_submodule.wt / "mod" / "s.txt").write_text("dirty before the run\n")
    await refused(req(with_submodule), "worktree-not-clean")
    git(with_submodule.wt / "mod", "checkout", "--", "s.txt")  # twin: clean again
    await admitted(req(with_submodule))


# A linked worktree's submodule repositories live in its own git dir (``modules/<name>``),
# not in the common dir. Observed before: the binding walked their object storage and bound
# their index, so a worker's plain ``git status`` (which refreshes the submodule's index as
# a side effect) failed as ``worker-git-mutation``, and a reviewer's ``git status`` inside
# the submodule voided its review.


def submodule_repo(wt: Path) -> Path:
    gd = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip())
    return gd / "modules" / "mod"


def refresh_and_grow_the_submodule(wt: Path) -> None:
    """What reading does there: the submodule's index refreshed, an object added."""
    index = submodule_repo(wt) / "index"
    before = index.read_bytes()
    os.utime(wt / "mod" / "s.txt", ns=(1_000_000_000, 1_000_000_000))
    for cmd in (["status"], ["hash-object", "-w", "--stdin"]):
        subprocess.run(["git", *cmd], cwd=wt / "mod", input=b"o\n", capture_output=True, check=True)
    assert index.read_bytes() != before  # the refresh really wrote the submodule's index


def submodule_hook(wt: Path) -> None:
    hook = submodule_repo(wt) / "hooks" / "post-checkout"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)


async def test_twin_reading_a_submodule_does_not_fail_the_worker(with_submodule: Layout) -> None:
    assert submodule_repo(with_submodule.wt).is_dir()
    effect = chain(write("a.txt", "A\n"), refresh_and_grow_the_submodule)
    ran = await run(with_submodule, [Step(effect=effect)], [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


async def test_twin_reading_a_submodule_does_not_void_a_review(with_submodule: Layout) -> None:
    effect = refresh_and_grow_the_submodule
    ran = await run(with_submodule, [Step(effect=write("a.txt", "A\n"))], [Step(effect=effect)])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


@pytest.mark.parametrize("role", ["worker", "reviewer"])
async def test_a_hook_in_the_submodule_repository_is_a_mutation(
    with_submodule: Layout, role: str
) -> None:
    fix = write("a.txt", "A\n")
    worker = Step(effect=chain(fix, submodule_hook) if role == "worker" else fix)
    reviewer = Step(effect=submodule_hook if role == "reviewer" else None)
    ran = await run(with_submodule, [worker], [reviewer])
    r = ran.outcome.receipt
    assert r.error is not None
    assert r.error.code == ("worker-git-mutation" if role == "worker" else "reviewer-mutation")


def stage_inside_the_submodule(wt: Path) -> None:
    """A reviewer's 'git add' inside the submodule: its index entries change."""
    subprocess.run(["git", "update-index", "--chmod=+x", "s.txt"], cwd=wt / "mod", check=True)


async def test_a_reviewers_change_inside_a_submodule_is_that_submodules(
    with_submodule: Layout,
) -> None:
    """Observed before (issue 24 §1): the run failed as ``unsupported-changed-path``, as if
    the candidate held an unsupported change; the candidate was fine and the reviewer had
    changed the submodule's index. Now ``reviewer-mutation``, the evidence naming the
    submodule. Twin: a reviewer that only reads there (above) approves."""
    fix = Step(effect=write("a.txt", "A\n"))
    ran = await run(with_submodule, [fix], [Step(effect=stage_inside_the_submodule)])
    r = ran.outcome.receipt
    assert r.error is not None and r.error.code == "reviewer-mutation"
    assert evidence_paths(with_submodule, r.phases[-1]) == ["submodule/mod"]

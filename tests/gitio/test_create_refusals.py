"""The bad-input table of worktree creation: each refusal exits 2 with its code and
creates nothing (every byte under the test folder is unchanged), and each has a
negative-control twin — the nearest good input — that does create the worktree."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from factory.errors import ExitCode, FactoryError
from factory.gitio.create import WorktreeSpec, create_worktree, plan_worktree
from tests.gitio.helpers import sample_repo, snapshot
from tests.support.git import git


@dataclass
class Case:
    code: str
    bad: Callable[[Path], WorktreeSpec]
    twin: Callable[[Path], WorktreeSpec]


def _repo(tmp: Path) -> Path:
    repo = tmp / "proj"
    return repo if repo.exists() else sample_repo(repo)


def _empty(tmp: Path) -> Path:
    repo = tmp / "empty"
    if not repo.exists():
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
    return repo


def _first_commit(tmp: Path) -> Path:
    repo = _empty(tmp)
    if not git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False).strip():
        (repo / "f").write_text("x\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
    return repo


def _unborn(tmp: Path) -> Path:
    repo = _repo(tmp)
    git(repo, "symbolic-ref", "HEAD", "refs/heads/nothing-yet")
    return repo


def _shallow(tmp: Path) -> Path:
    shallow = tmp / "shallow"
    if not shallow.exists():
        src = _repo(tmp)
        git(tmp, "clone", "-q", "--depth", "1", f"file://{src}", str(shallow))
    return shallow


def _root_commit(tmp: Path) -> str:
    return git(_repo(tmp), "rev-list", "--max-parents=0", "HEAD").strip()


def _taken(tmp: Path) -> Path:
    (tmp / "taken").mkdir(exist_ok=True)
    return tmp / "taken"


def _dangling(tmp: Path) -> Path:
    link = tmp / "dangling"
    if not link.is_symlink():
        link.symlink_to(tmp / "nowhere")
    return link


def _unsafe_base(tmp: Path) -> str:
    repo = _repo(tmp)
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"x\n", capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    tree = (
        subprocess.run(
            ["git", "mktree"],
            cwd=repo,
            input=f"100644 blob {blob}\t.GIT\n".encode(),
            capture_output=True,
        )
        .stdout.decode()
        .strip()
    )
    return git(repo, "commit-tree", "-m", "evil", tree).strip()


CASES = [
    Case(
        "base-missing",
        lambda t: WorktreeSpec(_repo(t), base="nope"),
        lambda t: WorktreeSpec(_repo(t), base="main"),
    ),
    Case(
        "base-unborn",
        lambda t: WorktreeSpec(_unborn(t)),
        lambda t: WorktreeSpec(_unborn(t), base="main"),
    ),
    Case(
        "base-not-a-commit",
        lambda t: WorktreeSpec(_repo(t), base="HEAD^{tree}"),
        lambda t: WorktreeSpec(_repo(t), base="HEAD^{commit}"),
    ),
    Case(
        "base-not-a-commit",
        lambda t: WorktreeSpec(_repo(t), base="HEAD:README.md"),
        lambda t: WorktreeSpec(_repo(t), base="HEAD~1"),
    ),
    Case(
        "repository-empty",
        lambda t: WorktreeSpec(_empty(t)),
        lambda t: WorktreeSpec(_first_commit(t)),
    ),
    Case(
        "base-missing-shallow",
        lambda t: WorktreeSpec(_shallow(t), base=_root_commit(t)),
        lambda t: WorktreeSpec(_shallow(t), base="HEAD"),
    ),
    Case(
        "base-missing-shallow",
        lambda t: WorktreeSpec(_shallow(t), base="HEAD~1"),
        lambda t: WorktreeSpec(_shallow(t), base="HEAD~0"),
    ),
    Case(
        "worktree-dir-exists",
        lambda t: WorktreeSpec(_repo(t), path=_taken(t)),
        lambda t: WorktreeSpec(_repo(t), path=t / "free"),
    ),
    Case(
        "worktree-dir-exists",
        lambda t: WorktreeSpec(_repo(t), path=_dangling(t)),
        lambda t: WorktreeSpec(_repo(t), path=t / "nowhere"),
    ),
    Case(
        "worktree-dir-folder-missing",
        lambda t: WorktreeSpec(_repo(t), path=t / "no" / "wt"),
        lambda t: WorktreeSpec(_repo(t), path=t / "wt"),
    ),
    Case(
        "worktree-dir-inside-repository",
        lambda t: WorktreeSpec(_repo(t), path=t / "proj" / "wt"),
        lambda t: WorktreeSpec(_repo(t), path=t / "proj-wt"),
    ),
    Case(
        "worktree-dir-inside-repository",
        lambda t: WorktreeSpec(_repo(t), path=t / "proj" / ".git" / "wt"),
        lambda t: WorktreeSpec(_repo(t), path=t / "wt"),
    ),
    Case(
        "branch-exists",
        lambda t: WorktreeSpec(_repo(t), branch="main"),
        lambda t: WorktreeSpec(_repo(t), branch="main-2"),
    ),
    Case(
        "branch-exists",
        lambda t: WorktreeSpec(_repo(t), branch="main/sub"),
        lambda t: WorktreeSpec(_repo(t), branch="mainline/sub"),
    ),
    Case(
        "branch-invalid",
        lambda t: WorktreeSpec(_repo(t), branch="a..b"),
        lambda t: WorktreeSpec(_repo(t), branch="a.b"),
    ),
    Case(
        "branch-invalid",
        lambda t: WorktreeSpec(_repo(t), branch="-x"),
        lambda t: WorktreeSpec(_repo(t), branch="x-"),
    ),
    Case("repo-missing", lambda t: WorktreeSpec(t / "absent"), lambda t: WorktreeSpec(_repo(t))),
    Case(
        "not-a-git-repository", lambda t: WorktreeSpec(_taken(t)), lambda t: WorktreeSpec(_repo(t))
    ),
    Case(
        "base-tree-unsafe",
        lambda t: WorktreeSpec(_repo(t), base=_unsafe_base(t)),
        lambda t: WorktreeSpec(_repo(t), base="HEAD"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{i:02d}-{c.code}" for i, c in enumerate(CASES)])
def test_refusal_creates_nothing_and_its_twin_creates(tmp_path: Path, case: Case) -> None:
    bad = case.bad(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(FactoryError) as refused:
        plan_worktree(bad, "0123456789ab")
    assert (refused.value.code, refused.value.exit_code) == (case.code, ExitCode.USAGE)
    assert snapshot(tmp_path) == before  # nothing created, nothing rewritten

    twin = case.twin(tmp_path)
    plan = plan_worktree(twin, "0123456789ab")
    wt = create_worktree(plan)
    assert git(wt.root, "status", "--porcelain") == ""
    assert git(wt.root, "rev-parse", "HEAD").strip() == plan.base_commit


def test_partial_clone_is_refused_and_a_full_clone_twin_is_not(tmp_path: Path) -> None:
    src = sample_repo(tmp_path / "src")
    git(src, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    git(
        tmp_path,
        "clone",
        "-q",
        "--filter=blob:none",
        "--no-checkout",
        f"file://{src}",
        str(partial),
    )
    before = snapshot(tmp_path)
    with pytest.raises(FactoryError) as refused:
        plan_worktree(WorktreeSpec(partial), "0123456789ab")
    assert refused.value.code == "repository-partial-clone"
    assert snapshot(tmp_path) == before
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", "--no-checkout", f"file://{src}", str(full))
    create_worktree(plan_worktree(WorktreeSpec(full), "0123456789ab"))

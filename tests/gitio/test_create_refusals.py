"""The bad-input table of worktree creation: each refusal exits 2 with its code and
creates nothing (every byte under the test folder is unchanged), and each has a
negative-control twin — the nearest good input — that does create the worktree."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.errors import ExitCode, FactoryError
from factory.gitio.create import WorktreeSpec, create_worktree, plan_worktree
from tests.gitio.helpers import sample_repo, snapshot
from tests.support.git import git


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


def at(*parts: str) -> Callable[[Path], Path]:
    return lambda t: t.joinpath(*parts)


Make = Callable[[Path], object]
# code, repository, the bad input, its twin (values may be made from the test folder)
CASES: list[tuple[str, Make, dict[str, object], dict[str, object]]] = [
    ("base-missing", _repo, {"base": "nope"}, {"base": "main"}),
    ("base-unborn", _unborn, {}, {"base": "main"}),
    ("base-not-a-commit", _repo, {"base": "HEAD^{tree}"}, {"base": "HEAD^{commit}"}),
    ("base-not-a-commit", _repo, {"base": "HEAD:README.md"}, {"base": "HEAD~1"}),
    ("repository-empty", _empty, {}, {"repo": _first_commit}),
    ("base-missing-shallow", _shallow, {"base": _root_commit}, {"base": "HEAD"}),
    ("base-missing-shallow", _shallow, {"base": "HEAD~1"}, {"base": "HEAD~0"}),
    ("worktree-dir-exists", _repo, {"path": _taken}, {"path": at("free")}),
    ("worktree-dir-exists", _repo, {"path": _dangling}, {"path": at("nowhere")}),
    ("worktree-dir-folder-missing", _repo, {"path": at("no", "wt")}, {"path": at("wt")}),
    ("worktree-dir-inside-repository", _repo, {"path": at("proj", "wt")}, {"path": at("p-wt")}),
    ("worktree-dir-inside-repository", _repo, {"path": at("proj", ".git", "w")}, {}),
    ("worktree-branch-exists", _repo, {"branch": "main"}, {"branch": "main-2"}),
    ("worktree-branch-exists", _repo, {"branch": "main/sub"}, {"branch": "mainline/sub"}),
    ("worktree-branch-invalid", _repo, {"branch": "a..b"}, {"branch": "a.b"}),
    ("worktree-branch-invalid", _repo, {"branch": "-x"}, {"branch": "x-"}),
    ("repo-missing", at("absent"), {}, {"repo": _repo}),
    ("not-a-git-repository", _taken, {}, {"repo": _repo}),
    ("base-tree-unsafe", _repo, {"base": _unsafe_base}, {"base": "HEAD"}),
]


def spec(tmp: Path, repo: Make, fields: dict[str, object]) -> WorktreeSpec:
    made = {k: v(tmp) if callable(v) else v for k, v in {"repo": repo, **fields}.items()}
    return WorktreeSpec(**made)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "repo", "bad", "twin"), CASES, ids=[f"{i:02d}-{c[0]}" for i, c in enumerate(CASES)]
)
def test_refusal_creates_nothing_and_its_twin_creates(
    tmp_path: Path, code: str, repo: Make, bad: dict[str, object], twin: dict[str, object]
) -> None:
    refused_spec = spec(tmp_path, repo, bad)
    before = snapshot(tmp_path)
    with pytest.raises(FactoryError) as refused:
        plan_worktree(refused_spec, "0123456789ab")
    assert (refused.value.code, refused.value.exit_code) == (code, ExitCode.USAGE)
    assert snapshot(tmp_path) == before  # nothing created, nothing rewritten

    plan = plan_worktree(spec(tmp_path, repo, twin), "0123456789ab")
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

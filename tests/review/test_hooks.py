"""``factory review install-hooks`` with real git hooks (issue 13): git itself runs the
gates at commit and push; an edited hook is left alone and reported; ``--uninstall``
restores exactly what was there. Foreign hooks (kept and chained): test_hooks_chain.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.review.cli_helpers import review
from tests.review.gates_support import approve
from tests.support.git import add_linked_worktree, git

GUIDE = "docs/guide.md"


def _hooks(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def _git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def _remote_with_base(repo: Path, tmp: Path) -> Path:
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "--no-verify", "origin", "main")
    return bare


def test_install_then_git_runs_the_gates_at_commit_and_push(repo: Path, tmp_path: Path) -> None:
    bare = _remote_with_base(repo, tmp_path)
    ran = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert ran.code == 0, ran.stderr
    assert [h["action"] for h in ran.doc["hooks"]] == ["install", "install"]
    for name in ("pre-commit", "pre-push"):
        assert os.access(_hooks(repo) / name, os.X_OK)
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    (repo / GUIDE).write_text("# guide\n\nreviewed words, then edited\n")
    git(repo, "add", "-A")
    denied = _git_run(repo, "commit", "-q", "-m", "edited after approval")
    assert denied.returncode != 0
    assert "DENIED at pre-commit" in denied.stderr and "next:" in denied.stderr
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    git(repo, "add", "-A")
    allowed = _git_run(repo, "commit", "-q", "-m", "the approved candidate")
    assert allowed.returncode == 0, allowed.stderr
    pushed = _git_run(repo, "push", "-q", "origin", "main")
    assert pushed.returncode == 0, pushed.stderr
    assert "ALLOW at pre-push" in pushed.stderr
    assert git(bare, "rev-parse", "main").strip() == git(repo, "rev-parse", "HEAD").strip()
    other = _git_run(repo, "push", "-q", "origin", "HEAD~1:refs/heads/older")
    assert other.returncode != 0 and "delivery-derivation/not-head" in other.stderr


def test_a_linked_worktree_approves_and_the_primary_worktree_pushes(
    repo: Path, tmp_path: Path
) -> None:
    _remote_with_base(repo, tmp_path)
    review("install-hooks", "--cwd", str(repo), cwd=repo)
    wt = add_linked_worktree(repo, tmp_path / "wt")
    (wt / GUIDE).write_text("# guide\n\napproved over there\n")
    approve(wt, tmp_path)
    git(wt, "add", "-A")
    assert _git_run(wt, "commit", "-q", "-m", "approved in the linked worktree").returncode == 0
    head = git(wt, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "--detach", head)
    pushed = _git_run(repo, "push", "-q", "origin", "HEAD:refs/heads/work")
    assert pushed.returncode == 0, pushed.stderr


def test_first_publication_to_an_empty_remote_needs_the_whole_history_reviewed(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    review("install-hooks", "--cwd", str(repo), cwd=repo)
    (repo / "secret.txt").write_text("token=abc\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "an unreviewed start")
    (repo / "secret.txt").write_text("nothing to see\n")  # overwritten, still in history
    approve(repo, tmp_path)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "reviewed")
    bare = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    leak = _git_run(repo, "push", "-q", "origin", "main")
    assert leak.returncode != 0 and "delivery-derivation/first-publication" in leak.stderr
    assert git(bare, "for-each-ref").strip() == ""
    clean = tmp_path / "clean"
    clean.mkdir()
    git(clean, "init", "-q", "-b", "main")
    review("install-hooks", "--cwd", str(clean), cwd=clean)
    (clean / "app.txt").write_text("all of it reviewed\n")
    approve(clean, tmp_path)
    git(clean, "add", "-A")
    git(clean, "commit", "-q", "-m", "root, reviewed from the empty tree")
    empty = tmp_path / "empty2.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    git(clean, "remote", "add", "origin", str(empty))
    ok = _git_run(clean, "push", "-q", "origin", "main")
    assert ok.returncode == 0, ok.stderr


def test_an_edited_hook_is_left_alone_and_uninstall_restores_exactly(repo: Path) -> None:
    hooks = _hooks(repo)
    before = sorted(os.listdir(hooks)) if hooks.exists() else []
    assert review("install-hooks", "--cwd", str(repo), cwd=repo).code == 0
    again = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert [h["action"] for h in again.doc["hooks"]] == ["already-installed"] * 2
    edited = (hooks / "pre-push").read_bytes() + b"echo my addition\n"
    (hooks / "pre-push").write_bytes(edited)
    third = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert [h["action"] for h in third.doc["hooks"]] == ["already-installed", "left-alone"]
    assert "left" in third.stderr and (hooks / "pre-push").read_bytes() == edited
    gone = review("install-hooks", "--cwd", str(repo), "--uninstall", cwd=repo)
    assert [h["action"] for h in gone.doc["hooks"]] == ["removed", "left-alone"]
    assert gone.doc["left_alone"] == 1 and (hooks / "pre-push").read_bytes() == edited
    (hooks / "pre-push").unlink()
    assert sorted(os.listdir(hooks)) == before


def test_core_hooks_path_is_where_the_hooks_go(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    ran = review("install-hooks", "--cwd", str(repo), cwd=repo)
    assert ran.code == 0 and ran.doc["hooks_dir"] == str(repo / ".githooks")
    assert (repo / ".githooks" / "pre-commit").is_file()

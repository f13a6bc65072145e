"""Real git repositories for tests (pinned identity comes from tests/conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git in ``cwd`` and return stdout as text."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def init_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A new repository at ``path`` with one commit holding ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in (files or {"README.md": "sample\n"}).items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def add_linked_worktree(repo: Path, path: Path, branch: str = "work") -> Path:
    """A linked worktree of ``repo`` at ``path`` on a new branch."""
    git(repo, "worktree", "add", "-q", "-b", branch, str(path))
    return path

"""The repository's ``.pre-commit-hooks.yaml`` under the real pre-commit framework (pinned
in the dev dependencies), in a temporary repository (issue 13): installed for pre-commit
and pre-push, an approved commit passes, an edited one is denied with the reason on screen,
and the push of the committed candidate passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.review.gates_support import approve
from tests.support.git import git

ROOT = Path(__file__).resolve().parents[2]
GUIDE = "docs/guide.md"


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PRE_COMMIT_HOME"] = str(tmp / "pre-commit-home")
    env.pop("PRE_COMMIT_COLOR", None)
    env["NO_COLOR"] = "1"
    return env


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    hooks = tmp / "hook-repo"
    hooks.mkdir()
    git(hooks, "init", "-q", "-b", "main")
    shutil.copyfile(ROOT / ".pre-commit-hooks.yaml", hooks / ".pre-commit-hooks.yaml")
    git(hooks, "add", "-A")
    git(hooks, "commit", "-q", "-m", "the hooks of factory")
    return hooks, git(hooks, "rev-parse", "HEAD").strip()


def test_the_pre_commit_framework_runs_the_review_gates(repo: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    hooks, rev = _hook_repo(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hooks}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: factory-review-pre-commit\n"
        "      - id: factory-review-pre-push\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "use the review gates")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    pre_commit = [sys.executable, "-m", "pre_commit"]
    installed = _run(
        repo, env, *pre_commit, "install", "--hook-type", "pre-commit", "--hook-type", "pre-push"
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (repo / ".git" / "hooks" / "pre-push").is_file()

    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    (repo / GUIDE).write_text("# guide\n\nreviewed words, edited afterwards\n")
    git(repo, "add", "-A")
    denied = _run(repo, env, "git", "commit", "-m", "edited after approval")
    screen = denied.stdout + denied.stderr
    assert denied.returncode != 0, screen
    assert "factory review gate (pre-commit)" in screen and "Failed" in screen
    assert "DENIED at pre-commit" in screen and "receipt-discovery/scope-changed" in screen
    assert "next: factory review recover" in screen
    assert '"schema"' not in screen  # one line, not the document (that needs --json)

    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    git(repo, "add", "-A")
    allowed = _run(repo, env, "git", "commit", "-m", "the approved candidate")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "factory review gate (pre-commit)" in allowed.stdout + allowed.stderr
    assert "Passed" in allowed.stdout + allowed.stderr

    pushed = _run(repo, env, "git", "push", "origin", "main")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert "factory review gate (pre-push)" in pushed.stdout + pushed.stderr
    assert git(bare, "rev-parse", "main").strip() == git(repo, "rev-parse", "HEAD").strip()

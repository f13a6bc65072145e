"""A hook prints one line (issue 23 §2): the allow, or the denial with its next command;
the gate-result document only with ``--json`` (the twin that must still print it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.review.cli_helpers import review
from tests.review.gates_support import approve
from tests.support.git import git

GUIDE = "docs/guide.md"


def _git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def test_git_hooks_print_one_line_for_a_denial_and_an_allow(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    assert review("install-hooks", cwd=repo).code == 0
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    (repo / GUIDE).write_text("# guide\n\nedited after the approval\n")
    git(repo, "add", "-A")
    denied = _git_run(repo, "commit", "-q", "-m", "edited")
    assert denied.returncode != 0 and denied.stdout == ""
    [line] = denied.stderr.splitlines()
    assert "DENIED at pre-commit" in line and "(next: factory review " in line
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    git(repo, "add", "-A")
    allowed = _git_run(repo, "commit", "-q", "-m", "the approved candidate")
    assert allowed.returncode == 0 and allowed.stdout == ""
    [line] = allowed.stderr.splitlines()
    assert "ALLOW at pre-commit" in line
    pushed = _git_run(repo, "push", "-q", "origin", "main")
    assert pushed.returncode == 0 and pushed.stdout == ""
    [line] = pushed.stderr.splitlines()
    assert "ALLOW at pre-push" in line


def test_the_json_document_only_with_json(repo: Path, tmp_path: Path) -> None:
    (repo / GUIDE).write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    for gate in ("pre-commit", "pre-pr"):
        plain = review("validate", "--gate", gate, "--base-ref", "main", cwd=repo)
        if gate == "pre-commit":
            plain = review("validate", "--gate", gate, cwd=repo)
        assert plain.stdout == b"" and len(plain.stderr.splitlines()) == 1
        args = ["validate", "--gate", gate, "--json"]
        doc = review(*args, *(["--base-ref", "main"] if gate == "pre-pr" else []), cwd=repo)
        assert json.loads(doc.stdout)["schema"] == "factory.review-gate-result/1"
        assert doc.code == plain.code == 0
        assert (
            doc.stderr.split(" (store facts")[0].strip()
            == plain.stderr.split(" (store facts")[0].strip()
        )

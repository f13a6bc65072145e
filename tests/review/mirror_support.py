"""Two clones and a bare remote for the review mirror tests (issue 23 §2)."""

from __future__ import annotations

from pathlib import Path

from tests.review.cli_helpers import Ran, review
from tests.review.gates_support import approve, commit
from tests.support.git import git

NS = "refs/factory/review/v1/"


def with_remote(repo: Path, tmp: Path) -> Path:
    """A bare ``origin`` of ``repo`` holding its ``main``."""
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare


def approve_and_push(repo: Path, tmp: Path, text: str = "reviewed words") -> str:
    """Edit the guide, approve it, commit it on a branch and push the branch; the lineage."""
    git(repo, "switch", "-q", "-c", f"topic-{abs(hash(text)) % 10_000}")
    (repo / "docs" / "guide.md").write_text(f"# guide\n\n{text}\n")
    lineage = str(approve(repo, tmp)["lineage"])
    commit(repo, "the reviewed change")
    git(repo, "push", "-q", "origin", "HEAD")
    return lineage


def clone(bare: Path, dest: Path, branch: str) -> Path:
    git(bare.parent, "clone", "-q", "--branch", branch, str(bare), str(dest))
    return dest


def gate(repo: Path, *extra: str) -> Ran:
    """``validate --gate pre-pr --base-ref origin/main --json`` (from refs by default)."""
    args = ("validate", "--gate", "pre-pr", "--base-ref", "origin/main", "--json", *extra)
    return review(*args, cwd=repo)


def code(ran: Ran) -> str | None:
    d = ran.doc["denial"]
    return None if d is None else f"{d['stage']}/{d['code']}"


def branch_of(repo: Path) -> str:
    return git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()

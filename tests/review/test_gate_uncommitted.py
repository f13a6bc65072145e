"""``factory review validate --gate pre-push`` (or ``release``) while the approved change
still sits uncommitted on HEAD: the next step is the commit. Recovering would be refused
(the approval holds), so pointing at ``review recover`` made a cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.review.cli_helpers import review
from tests.review.gates_support import approve
from tests.support.git import git


@pytest.mark.parametrize("gate", ["pre-push", "release"])
def test_an_uncommitted_approved_change_is_told_to_commit(
    repo: Path, tmp_path: Path, gate: str
) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    denied = review("validate", "--gate", gate, "--json", "--cwd", str(repo), cwd=repo)
    assert denied.code == 3, denied.stderr
    nxt = denied.doc["context"]["next"]
    assert nxt == ["factory review validate --gate pre-commit", "git commit",
                   f"factory review validate --gate {gate}"]  # fmt: skip
    assert "is not committed yet" in denied.stderr
    assert not any("review recover" in n for n in nxt)
    # following next: the commit the pre-commit gate allows, then the gate allows
    assert review("validate", "--gate", "pre-commit", cwd=repo).code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "the approved candidate")
    allowed = review("validate", "--gate", gate, cwd=repo)
    assert allowed.code == 0, allowed.stderr


def test_a_committed_change_beside_the_approved_one_still_names_recover(
    repo: Path, tmp_path: Path
) -> None:
    """The twin: HEAD's commit is not the approved change's base (another commit touched the
    reviewed path), so the change did move: a successor lineage is the way on."""
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    (repo / "docs" / "guide.md").write_text("# guide\n\nother words\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "something else")
    denied = review("validate", "--gate", "pre-push", "--json", "--cwd", str(repo), cwd=repo)
    assert denied.code == 3
    assert denied.doc["context"]["next"][0].startswith("factory review recover ")

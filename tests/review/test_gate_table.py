"""Gate × receipt state × live drift on real repositories (issue 13): each row names the
expected result, denial code and the first next command; every denial's reason names that
command, and the output is what the decision gate's review-gate provider accepts."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from factory.gate.providers import review_gate
from factory.review.gates.result import ACTIONS
from factory.review.receipt import RECEIPT_FILE
from tests.review.cli_helpers import store_root
from tests.review.gates_support import approve, begin, code, commit, finish, gate
from tests.support.git import git

GUIDE = "docs/guide.md"


def _edit_guide(repo: Path, text: str = "# guide\n\nmore words\n") -> None:
    (repo / GUIDE).write_text(text)


def _approved(repo: Path, tmp: Path) -> str:
    _edit_guide(repo)
    return str(approve(repo, tmp)["lineage"])


def _committed(repo: Path, tmp: Path) -> str:
    lid = _approved(repo, tmp)
    commit(repo)
    return lid


def _escalated(repo: Path, tmp: Path) -> str:
    _edit_guide(repo)
    begin(repo)
    view = finish(repo, tmp, failed=True)
    assert view["state"] == "escalated"
    return str(view["lineage"])


def _remote(repo: Path, tmp: Path, *, default_branch: bool = True) -> None:
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    if not default_branch:
        (bare / "HEAD").write_text("ref: refs/heads/nowhere\n")


@dataclass(frozen=True)
class Row:
    gate: str
    setup: Callable[[Path, Path], dict[str, object]]
    result: str
    denial: str | None
    next_prefix: str


def _r_clean(repo: Path, tmp: Path) -> dict[str, object]:
    _approved(repo, tmp)
    return {}


def _r_edit(repo: Path, tmp: Path) -> dict[str, object]:
    _approved(repo, tmp)
    _edit_guide(repo, "# guide\n\nmore words, and one more edit\n")
    return {}


def _r_edit_lineage(repo: Path, tmp: Path) -> dict[str, object]:
    lid = _approved(repo, tmp)
    _edit_guide(repo, "# guide\n\nmore words, and one more edit\n")
    return {"lineage": lid}


def _r_add_path(repo: Path, tmp: Path) -> dict[str, object]:
    lid = _approved(repo, tmp)
    (repo / "docs" / "extra.md").write_text("a new page\n")
    return {"lineage": lid}


def _r_stage_all(repo: Path, tmp: Path) -> dict[str, object]:
    _edit_guide(repo)
    (repo / "docs" / "new.md").write_text("a new page\n")  # intended, untracked at start
    approve(repo, tmp)
    git(repo, "add", "-A")  # staged unchanged: a change of representation, not of scope
    return {}


def _r_stage_partial(repo: Path, tmp: Path) -> dict[str, object]:
    _edit_guide(repo)
    (repo / "docs" / "new.md").write_text("a new page\n")
    approve(repo, tmp)
    git(repo, "add", GUIDE)  # the new page stays unstaged: a partial commit
    return {}


def _r_committed(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    return {}


def _r_amend(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    _edit_guide(repo, "# guide\n\namended after approval\n")
    commit(repo, "deliver", "--amend")
    return {}


def _r_empty_commit(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    git(repo, "commit", "-q", "--allow-empty", "-m", "replay")
    return {}


def _r_superseded(repo: Path, tmp: Path) -> dict[str, object]:
    from factory.review.recovery import recover
    from tests.review.gates_support import loaded

    lid = _approved(repo, tmp)
    _edit_guide(repo, "# guide\n\nchanged after approval\n")
    rev = loaded(repo, lid).revision
    recover(
        repo,
        predecessor=lid,
        expected_revision=rev,
        disposition="scope_changed",
        reason="edited after approval",
        actor="maintainer",
        authorization=None,
    )
    _edit_guide(repo)  # back to the approved bytes: only the graph says no
    return {"lineage": lid}


def _r_corrupt(repo: Path, tmp: Path) -> dict[str, object]:
    _approved(repo, tmp)
    (repo / "README.md").write_text("another change\n")
    other = begin(repo)  # a second lineage, reviewing
    (repo / "README.md").write_text("sample\n")
    path = store_root(repo) / str(other["lineage"]) / "review-state.json"
    path.write_bytes(path.read_bytes()[:100])
    return {}


def _r_missing_receipt(repo: Path, tmp: Path) -> dict[str, object]:
    lid = _approved(repo, tmp)
    (store_root(repo) / lid / RECEIPT_FILE).unlink()
    return {}


def _r_incomplete(repo: Path, tmp: Path) -> dict[str, object]:
    _approved(repo, tmp)
    (store_root(repo) / "review-crashed").mkdir()
    return {}


def _r_unrelated(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    (repo / "README.md").write_text("the next slice\n")
    return {}


def _r_pre_pr(repo: Path, tmp: Path) -> dict[str, object]:
    _remote(repo, tmp)
    _committed(repo, tmp)
    return {}


def _r_pre_pr_moved_base(repo: Path, tmp: Path) -> dict[str, object]:
    _remote(repo, tmp)
    _committed(repo, tmp)
    git(repo, "switch", "-q", "-c", "other", "HEAD~1")
    (repo / "README.md").write_text("main moved on\n")
    commit(repo, "upstream change")
    git(repo, "push", "-q", "origin", "other:main")
    git(repo, "switch", "-q", "main")
    git(repo, "fetch", "-q", "origin")
    git(repo, "rebase", "-q", "origin/main")
    return {}


def _r_older_boundary(repo: Path, tmp: Path) -> dict[str, object]:
    (repo / "README.md").write_text("an earlier change\n")
    commit(repo, "earlier")
    _committed(repo, tmp)
    return {"base_ref": "HEAD~2"}


def _r_no_default_branch(repo: Path, tmp: Path) -> dict[str, object]:
    _remote(repo, tmp, default_branch=False)
    _committed(repo, tmp)
    return {}


def _r_unknown_base_ref(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    return {"base_ref": "no-such-branch"}


def _r_no_remote_uncommitted(repo: Path, tmp: Path) -> dict[str, object]:
    _approved(repo, tmp)  # nothing committed, no remote: no change to look a lineage up by
    return {}


def _r_no_remote_committed(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    return {}


def _r_release(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    art = tmp / "dist.tar"
    art.write_bytes(b"artifact bytes")
    return {"artifacts": (art,)}


def _r_release_missing(repo: Path, tmp: Path) -> dict[str, object]:
    _committed(repo, tmp)
    return {"artifacts": (tmp / "not-built.tar",)}


def _r_escalated(repo: Path, tmp: Path) -> dict[str, object]:
    _escalated(repo, tmp)
    return {}


ROWS = {
    "pre-commit/approved/clean": Row("pre-commit", _r_clean, "allow", None, "git commit"),
    "pre-commit/approved/edit-reviewed-file": Row(
        "pre-commit",
        _r_edit,
        "scope-changed",
        "receipt-discovery/scope-changed",
        "factory review recover",
    ),
    "pre-commit/approved/edit --lineage": Row(
        "pre-commit",
        _r_edit_lineage,
        "scope-changed",
        "receipt-binding/candidate-or-paths-mismatch",
        "factory review recover",
    ),
    "pre-commit/approved/add-path": Row(
        "pre-commit",
        _r_add_path,
        "scope-changed",
        "receipt-binding/candidate-or-paths-mismatch",
        "factory review recover",
    ),
    "pre-commit/approved/stage-all": Row("pre-commit", _r_stage_all, "allow", None, "git commit"),
    "pre-commit/approved/stage-partial": Row(
        "pre-commit",
        _r_stage_partial,
        "invalidated",
        "receipt-binding/staged-tree-mismatch",
        "git add -A",
    ),
    "pre-commit/approved/committed": Row(
        "pre-commit",
        _r_committed,
        "invalidated",
        "receipt-binding/base-mismatch",
        "factory review validate --gate pre-push",
    ),
    "pre-commit/approved/next-slice-unrelated": Row(
        "pre-commit",
        _r_unrelated,
        "scope-changed",
        "receipt-discovery/unrelated",
        "factory review start",
    ),
    "pre-commit/superseded": Row(
        "pre-commit",
        _r_superseded,
        "invalidated",
        "receipt-validation/superseded",
        "factory review validate --gate pre-commit --lineage review-",
    ),
    "pre-commit/corrupted-state": Row(
        "pre-commit",
        _r_corrupt,
        "invalidated",
        "receipt-discovery/authority-corrupted",
        "factory review repair",
    ),
    "pre-commit/incomplete-entry": Row(
        "pre-commit",
        _r_incomplete,
        "invalidated",
        "receipt-discovery/authority-corrupted",
        "factory review reclaim --lineage review-crashed",
    ),
    "pre-commit/missing-receipt": Row(
        "pre-commit",
        _r_missing_receipt,
        "invalidated",
        "receipt-validation/receipt-missing",
        "factory review finalize --lineage",
    ),
    "pre-commit/escalated": Row(
        "pre-commit",
        _r_escalated,
        "escalated",
        "receipt-validation/escalated",
        "factory review recover",
    ),
    "pre-push/approved/committed": Row("pre-push", _r_committed, "allow", None, "git push"),
    "pre-push/approved/uncommitted": Row(  # recover would be refused: commit first
        "pre-push",
        _r_clean,
        "scope-changed",
        "receipt-discovery/scope-changed",
        "factory review validate --gate pre-commit",
    ),
    "pre-push/approved/amended": Row(
        "pre-push",
        _r_amend,
        "scope-changed",
        "receipt-discovery/scope-changed",
        "factory review recover",
    ),
    "pre-push/approved/empty-commit": Row(
        "pre-push",
        _r_empty_commit,
        "invalidated",
        "delivery-derivation/empty-commit",
        "git reset --soft HEAD~1",
    ),
    "pre-pr/approved/committed": Row(
        "pre-pr", _r_pre_pr, "allow", None, "factory review validate --gate release"
    ),
    "pre-pr/rebased-onto-moved-base": Row(
        "pre-pr",
        _r_pre_pr_moved_base,
        "scope-changed",
        "receipt-discovery/scope-changed",
        "factory review recover",
    ),
    "pre-pr/boundary-older-than-reviewed-base": Row(
        "pre-pr",
        _r_older_boundary,
        "invalidated",
        "receipt-binding/base-mismatch",
        "factory review start",
    ),
    "pre-pr/remote-without-default-branch": Row(
        "pre-pr",
        _r_no_default_branch,
        "invalidated",
        "boundary-selection/unavailable",
        "factory review validate --gate pre-pr --base-ref REF",
    ),
    # Without the remote the boundary comes from, pre-pr says so, whether or not the change
    # is committed (it used to answer "touches no path any lineage reviewed" and name
    # 'review start', which resumed the approved lineage: a cycle).
    "pre-pr/no-remote/approved-uncommitted": Row(
        "pre-pr",
        _r_no_remote_uncommitted,
        "invalidated",
        "boundary-selection/unavailable",
        "factory review validate --gate pre-pr --base-ref REF",
    ),
    "pre-pr/no-remote/committed": Row(
        "pre-pr",
        _r_no_remote_committed,
        "invalidated",
        "boundary-selection/unavailable",
        "factory review validate --gate pre-pr --base-ref REF",
    ),
    "pre-pr/unknown-base-ref": Row(
        "pre-pr",
        _r_unknown_base_ref,
        "invalidated",
        "boundary-selection/unavailable",
        "factory review validate --gate pre-pr --base-ref REF",
    ),
    "release/approved/committed+artifact": Row(
        "release", _r_release, "allow", None, "factory review status"
    ),
    "release/artifact-missing": Row(
        "release",
        _r_release_missing,
        "invalidated",
        "release-evidence/artifact-unreadable",
        "factory review validate --gate release",
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_gate_table(name: str, repo: Path, tmp_path: Path) -> None:
    row = ROWS[name]
    work = tmp_path / "work"
    work.mkdir()
    kwargs = row.setup(repo, work)
    result = gate(repo, row.gate, **kwargs)
    assert (result.result, code(result)) == (row.result, row.denial), result.reason
    assert result.action == ACTIONS[row.result] and result.allowed == (row.result == "allow")
    nxt = result.context.next
    assert nxt and nxt[0].startswith(row.next_prefix), nxt
    if row.denial is not None:
        assert nxt[0] in result.reason
    assert result.context.model_calls == 0

    async def typed(gate_name: str, where: Path) -> Any:
        return result

    seen = trio.run(review_gate.make(typed), {"gate": "pre-pr", "repo": str(repo)})
    assert seen.failure is None and seen.document["allowed"] == result.allowed  # what the
    # decision gate's review-gate evidence source observes of the typed result


def test_release_binds_the_artifact_digest_and_pre_pr_records_its_boundary(
    repo: Path, tmp_path: Path
) -> None:
    _remote(repo, tmp_path)
    _committed(repo, tmp_path)
    art = tmp_path / "dist.tar"
    art.write_bytes(b"artifact bytes")
    rel = gate(repo, "release", artifacts=(art,))
    assert rel.allowed and rel.context.artifacts[0].bytes == len(b"artifact bytes")
    pr = gate(repo, "pre-pr")
    assert pr.allowed and pr.context.boundary is not None
    assert (pr.context.boundary.source, pr.context.boundary.remote) == (
        "push-remote-default-branch",
        "origin",
    )
    assert pr.context.boundary.ref == "refs/heads/main"
    git(repo, "config", "remote.pushDefault", "upstream")  # the push remote chain decides
    chosen = gate(repo, "pre-pr")
    assert code(chosen) == "boundary-selection/unavailable" and "upstream" in chosen.reason
    git(repo, "config", "branch.main.pushRemote", "origin")
    assert gate(repo, "pre-pr").allowed


def test_a_reclaimed_incomplete_entry_lets_discovery_work_again(repo: Path, tmp_path: Path) -> None:
    from factory.review.repair import reclaim

    _approved(repo, tmp_path)
    crashed = store_root(repo) / "review-crashed"
    (crashed / "evidence").mkdir(parents=True)
    (crashed / "evidence" / "blob").write_bytes(b"left by a crash")
    assert code(gate(repo, "pre-commit")) == "receipt-discovery/authority-corrupted"
    reclaim(repo, "review-crashed", "crash residue of an old version", "maintainer")
    assert gate(repo, "pre-commit").allowed
    assert not crashed.exists() and os.listdir(store_root(repo) / ".quarantine")

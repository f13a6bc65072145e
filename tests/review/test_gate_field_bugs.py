"""The reference's field bugs at the gates, as tests (reference/gentle-ai.md §8)."""

from __future__ import annotations

import json
from pathlib import Path

from factory.review.finalize import FinalizeArgs, finalize
from factory.review.service import open_context
from tests.review.cli_helpers import edit_parser
from tests.review.gates_support import approve, begin, code, commit, gate
from tests.support.git import add_linked_worktree, git


def test_1097_pre_push_right_after_committing_the_reviewed_tree_allows(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    lid = approve(repo, tmp_path)["lineage"]
    assert gate(repo, "pre-commit").allowed
    commit(repo)
    pushed = gate(repo, "pre-push")
    assert pushed.allowed and pushed.context.lineage_id == lid, pushed.reason
    assert pushed.context.live is not None and pushed.context.live.kind == "commit-range"


def _critical(path: str, line: int) -> dict[str, object]:
    return {
        "location": f"{path}:{line}",
        "severity": "CRITICAL",
        "claim": "f0 now negates its input",
        "proof_refs": ["test_f0 passes on base and fails on the candidate"],
        "evidence_class": "deterministic",
        "causal_disposition": "introduced",
    }


def _finalize(repo: Path, **kw: object) -> dict[str, object]:
    view, _ = finalize(open_context(repo), FinalizeArgs(**kw))  # type: ignore[arg-type]
    return view


def test_2169_a_correction_that_reverts_a_file_is_not_a_scope_change(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo, lines=6)
    (repo / "README.md").write_text("sample, edited\n")
    begin(repo)
    result = tmp_path / "r.json"
    result.write_text(
        json.dumps(
            {"findings": [_critical("src/parser.py", 2)], "evidence": ["read the whole diff"]}
        )
    )
    found = _finalize(repo, results=(result,), correction_lines=4)
    assert found["state"] == "correction_required"
    parser = repo / "src" / "parser.py"
    parser.write_text(parser.read_text().replace("return -x + 0", "return x + 0"))
    (repo / "README.md").write_text("sample\n")  # the correction reverts a whole file
    validation = tmp_path / "v.json"
    check = {"passed": True, "evidence": ["test_f0 passes again"]}
    validation.write_text(
        json.dumps({"original_criteria": check, "correction_regression": check, "follow_ups": []})
    )
    evidence = tmp_path / "e.txt"
    evidence.write_bytes(b"suite: 12 passed\n")
    done = _finalize(repo, validation=validation, evidence=str(evidence))
    assert done["state"] == "approved", done
    s = open_context(repo).store.load(str(done["lineage"])).state
    assert s.current_snapshot.paths == ("src/parser.py",)
    assert s.genesis_paths == ("README.md", "src/parser.py")
    at_commit = gate(repo, "pre-commit")
    assert at_commit.allowed, at_commit.reason
    commit(repo)
    assert gate(repo, "pre-push").allowed


def test_2758_an_approved_workspace_receipt_never_validates_as_empty_scope(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp_path)
    git(repo, "checkout", "-q", "--", ".")  # the reviewed change is gone: nothing to commit
    empty = gate(repo, "pre-commit")
    assert not empty.allowed and empty.context.live is not None
    assert empty.context.live.changed_paths == 0
    assert code(empty) == "receipt-discovery/unrelated"
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    commit(repo)
    after = gate(repo, "pre-commit")  # committed: the live pre-commit scope is empty again
    assert not after.allowed and code(after) == "receipt-binding/base-mismatch"
    assert after.context.next[0] == "factory review validate --gate pre-push"


def test_1819_pre_push_finds_a_receipt_approved_in_a_linked_worktree(
    repo: Path, tmp_path: Path
) -> None:
    wt = add_linked_worktree(repo, tmp_path / "wt")
    (wt / "docs" / "guide.md").write_text("# guide\n\nreviewed in the linked worktree\n")
    lid = approve(wt, tmp_path)["lineage"]
    head = commit(wt)
    git(repo, "switch", "-q", "--detach", head)  # push from the primary worktree
    pushed = gate(repo, "pre-push")
    assert pushed.allowed and pushed.context.lineage_id == lid, pushed.reason
    assert pushed.context.repository == str(repo.resolve())

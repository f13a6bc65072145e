"""A representation change is not a mismatch (issue 22): ``receipt verify`` recognises where
the judged candidate is now — uncommitted in the worktree, committed as a commit on the
base, committed then changed, the worktree gone — and fails only a worktree that holds
none of these, naming the differing paths. Real repositories, the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from factory.agent.representation import FirstCommit, LiveFacts, decide
from tests.agent.creating_helpers import Created, completed
from tests.support.git import git

BASE, CAND, OTHER = "b" * 40, "c" * 40, "d" * 40


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (LiveFacts(BASE, CAND, None), ("uncommitted", None)),
        (LiveFacts(BASE, OTHER, None), ("mismatch", None)),
        (LiveFacts(BASE, None, None), ("mismatch", None)),
        (LiveFacts("1" * 40, CAND, FirstCommit("1" * 40, BASE, CAND)), ("committed", "1" * 40)),
        (
            LiveFacts("1" * 40, OTHER, FirstCommit("1" * 40, BASE, CAND)),
            ("committed-then-changed", "1" * 40),
        ),
        (
            LiveFacts("2" * 40, CAND, FirstCommit("1" * 40, BASE, CAND)),
            ("committed-then-changed", "1" * 40),
        ),
        (LiveFacts("1" * 40, CAND, FirstCommit("1" * 40, BASE, OTHER)), ("mismatch", None)),
        (LiveFacts("1" * 40, CAND, FirstCommit("1" * 40, OTHER, CAND)), ("mismatch", None)),
        (LiveFacts("1" * 40, CAND, None), ("mismatch", None)),
    ],
    ids=[
        "uncommitted",
        "edited",
        "unreadable",
        "committed",
        "committed-then-edited",
        "committed-then-committed",
        "commit-of-another-tree",
        "commit-on-another-base",
        "no-commit-after-base",
    ],
)
def test_decide_table(facts: LiveFacts, expected: tuple[str, str | None]) -> None:
    assert decide(BASE, CAND, facts) == expected


def _rep(report: dict[str, Any]) -> dict[str, Any]:
    rep = report["representation"]
    assert isinstance(rep, dict)
    return rep


def _head(run: Created) -> str:
    return git(run.wt, "rev-parse", "HEAD").strip()


def test_uncommitted_and_staged_are_the_candidate(tmp_path: Path) -> None:
    run = completed(tmp_path)
    code, report, _ = run.verify()
    assert code == 0 and _rep(report)["state"] == "uncommitted"
    assert report["candidate"]["still_matches"] is True  # type: ignore[index]
    git(run.wt, "add", "-A")  # staged, not committed: the same files
    code, report, _ = run.verify()
    assert code == 0 and _rep(report) == {"state": "uncommitted", "head": _base(run)}


def _base(run: Created) -> str:
    creation = run.outcome.receipt.worktree_creation
    assert creation is not None
    return creation.base_commit


def test_committed_in_the_worktree_verifies_as_committed_as(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take the approved change")
    code, report, err = run.verify()
    assert code == 0, err
    head = _head(run)
    assert _rep(report) == {"state": "committed", "head": head, "committed_as": head}
    assert report["ok"] is True and report["candidate"]["still_matches"] is False  # type: ignore[index]


def test_committed_then_edited_names_the_paths(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take it")
    commit = _head(run)
    (run.wt / "src" / "app.py").write_text("def add(a, b):\n    return b + a\n")
    (run.wt / "notes.md").write_text("later\n")
    code, report, err = run.verify()
    assert code == 0, err
    assert _rep(report) == {
        "state": "committed-then-changed",
        "head": commit,
        "committed_as": commit,
        "changed_since": ["notes.md", "src/app.py"],
        "paths_left_out": 0,
    }


def test_committed_then_committed_again_names_the_paths(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take it")
    commit = _head(run)
    (run.wt / "later.txt").write_text("later\n")
    git(run.wt, "add", "later.txt")
    git(run.wt, "commit", "-q", "-m", "more")
    code, report, _ = run.verify()
    rep = _rep(report)
    assert code == 0 and rep["state"] == "committed-then-changed"
    assert rep["committed_as"] == commit and rep["head"] == _head(run) != commit
    assert rep["changed_since"] == ["later.txt"]


def test_an_amend_with_another_tree_is_a_mismatch_with_its_paths(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take it")
    (run.wt / "src" / "app.py").write_text("def add(a, b):\n    return 0\n")
    git(run.wt, "commit", "-q", "-a", "--amend", "-m", "something else")
    code, report, err = run.verify()
    assert code == 4 and report["ok"] is False
    rep = _rep(report)
    assert rep["state"] == "mismatch" and rep["differing_paths"] == ["src/app.py"]
    assert "committed_as" not in rep
    assert b"holds neither the judged candidate nor a commit of it" in err
    assert b"differing paths: src/app.py" in err

    # Twin: amended back to the judged tree, it is the candidate's commit again.
    (run.wt / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    git(run.wt, "commit", "-q", "-a", "--amend", "-m", "the candidate after all")
    code, report, _ = run.verify()
    assert code == 0 and _rep(report)["state"] == "committed"


def test_an_uncommitted_edit_is_a_mismatch_with_its_paths(tmp_path: Path) -> None:
    run = completed(tmp_path)
    (run.wt / "extra.txt").write_text("not judged\n")
    code, report, _ = run.verify()
    assert code == 4
    assert _rep(report) == {
        "state": "mismatch",
        "head": _base(run),
        "differing_paths": ["extra.txt"],
        "paths_left_out": 0,
    }


def test_a_commit_on_another_base_is_a_mismatch(tmp_path: Path) -> None:
    run = completed(tmp_path)
    # The same tree, committed on top of a commit that is not the base.
    (run.wt / "x.txt").write_text("x\n")
    git(run.wt, "add", "x.txt")
    git(run.wt, "commit", "-q", "-m", "unrelated")
    git(run.wt, "rm", "-q", "x.txt")
    git(run.wt, "commit", "-q", "-am", "the candidate on another parent")
    code, report, _ = run.verify()
    assert code == 4 and _rep(report)["state"] == "mismatch"
    assert (
        _rep(report)["differing_paths"] == []
    )  # the files are the candidate's; the history is not


def test_worktree_gone_is_verified_from_evidence(tmp_path: Path) -> None:
    run = completed(tmp_path)
    shutil.rmtree(run.wt)
    code, report, _ = run.verify()
    assert code == 0 and _rep(report) == {"state": "worktree-gone"}

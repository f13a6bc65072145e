"""The mirror judges like the local store (issue 23 §2): for each drift of the checkout
and each gate, a fresh clone with the fetched mirror (``--from-refs``) gives exactly the
result and reason code the developer's clone gives with its local store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.review.cli_helpers import review
from tests.review.gates_support import commit
from tests.review.mirror_support import approve_and_push, branch_of, clone, with_remote

Drift = Callable[[Path], None]


def _edit(repo: Path) -> None:
    (repo / "src" / "parser.py").write_text("def edited():\n    return 2\n")


def _untracked(repo: Path) -> None:
    (repo / "notes.txt").write_text("a new file\n")


def _committed(repo: Path) -> None:
    _edit(repo)
    commit(repo, "unreviewed")


def _reverted_guide(repo: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n")


DRIFTS: dict[str, Drift] = {
    "none": lambda repo: None,
    "edit": _edit,
    "untracked": _untracked,
    "committed": _committed,
    "reviewed-file-reverted": _reverted_guide,
}
GATES = {
    "pre-pr": ("--base-ref", "origin/main"),
    "pre-push": (),
    "release": (),
    "pre-commit": (),
}


def _answer(repo: Path, gate: str, *extra: str) -> tuple[int, str, str | None]:
    ran = review("validate", "--gate", gate, *GATES[gate], "--json", *extra, cwd=repo)
    assert ran.code in (0, 3), ran.stderr
    d = ran.doc["denial"]
    return ran.code, ran.doc["result"], None if d is None else f"{d['stage']}/{d['code']}"


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_the_mirror_answers_every_gate_as_the_local_store_does(
    repo: Path, tmp_path: Path, drift: str
) -> None:
    bare = with_remote(repo, tmp_path)
    approve_and_push(repo, tmp_path)
    assert review("push", cwd=repo).code == 0
    ci = clone(bare, tmp_path / "ci", branch_of(repo))
    assert review("fetch", cwd=ci).code == 0
    for where in (repo, ci):
        DRIFTS[drift](where)
    answers = {}
    for gate in GATES:
        local, mirrored = _answer(repo, gate), _answer(ci, gate, "--from-refs")
        assert mirrored == local, (gate, drift)
        answers[gate] = local
    if drift == "none":  # the reviewed candidate: delivered, so pre-commit has nothing left
        assert answers["pre-pr"][0] == answers["pre-push"][0] == answers["release"][0] == 0
    else:
        assert answers["pre-pr"][0] == 3

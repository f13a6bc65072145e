"""The final re-check under the store lock (issue 13): anything that moves between the
decision and the answer turns an allow into invalidated ("changed during final
authorization"); nothing moving keeps the allow (the negative control)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from factory.review.gates import validate as gate_validate
from tests.review.gates_support import approve, begin, code, commit, gate
from tests.support.git import git


@pytest.fixture
def between() -> Iterator[Callable[[Callable[[], object]], None]]:
    def install(action: Callable[[], object]) -> None:
        def hook(point: str) -> None:
            action()

        gate_validate.between_hook = hook

    yield install
    gate_validate.between_hook = gate_validate._no_hook


def _approved(repo: Path, tmp: Path) -> None:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    approve(repo, tmp)


def test_nothing_moving_keeps_the_allow_and_says_the_recheck_passed(
    repo: Path, tmp_path: Path, between: Callable[[Callable[[], object]], None]
) -> None:
    _approved(repo, tmp_path)
    between(lambda: None)
    result = gate(repo, "pre-commit")
    assert result.allowed and result.context.final_recheck == "passed"


def test_a_file_edited_during_the_decision_invalidates(
    repo: Path, tmp_path: Path, between: Callable[[Callable[[], object]], None]
) -> None:
    _approved(repo, tmp_path)
    between(lambda: (repo / "docs" / "guide.md").write_text("# guide\n\nraced\n") and None)
    result = gate(repo, "pre-commit")
    assert result.result == "invalidated" and code(result) == "final-authorization/changed"
    assert "changed during final authorization" in result.reason
    assert result.context.final_recheck == "changed"


def test_a_lineage_written_during_the_decision_invalidates(
    repo: Path, tmp_path: Path, between: Callable[[Callable[[], object]], None]
) -> None:
    _approved(repo, tmp_path)

    def other_lineage() -> None:
        saved = (repo / "README.md").read_text()
        (repo / "README.md").write_text("elsewhere\n")
        begin(repo)
        (repo / "README.md").write_text(saved)

    between(other_lineage)
    result = gate(repo, "pre-commit")
    assert code(result) == "final-authorization/changed" and "review store" in result.reason


def test_head_moving_during_a_pre_push_decision_invalidates(
    repo: Path, tmp_path: Path, between: Callable[[Callable[[], object]], None]
) -> None:
    _approved(repo, tmp_path)
    commit(repo)
    between(lambda: git(repo, "commit", "-q", "--allow-empty", "-m", "raced") and None)
    result = gate(repo, "pre-push")
    assert code(result) == "final-authorization/changed", result.reason


def test_an_artifact_rewritten_during_a_release_decision_invalidates(
    repo: Path, tmp_path: Path, between: Callable[[Callable[[], object]], None]
) -> None:
    _approved(repo, tmp_path)
    commit(repo)
    art = tmp_path / "dist.tar"
    art.write_bytes(b"built once")
    between(lambda: art.write_bytes(b"built twice") and None)
    result = gate(repo, "release", artifacts=(art,))
    assert code(result) == "final-authorization/changed"

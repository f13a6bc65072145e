"""``factory batch run --review`` refuses, before anything runs, a push remote whose HEAD
names no branch it has (a bare repository made with ``git init --bare`` whose HEAD is
``master`` while only ``main`` was pushed) — naming what to do, not ``git remote add``."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.batch.admission import _review_boundary
from factory.errors import FactoryError
from factory.gitio.repository import locate_repository
from tests.batch.helpers import repo_and_tasks
from tests.support.git import git


def _with_remote(tmp_path: Path) -> tuple[Path, Path]:
    repo, _ = repo_and_tasks(tmp_path, 1)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(bare, "symbolic-ref", "HEAD", "refs/heads/nothing-here")
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    return repo, bare


def test_a_remote_head_naming_no_branch_is_refused_with_the_remedy(tmp_path: Path) -> None:
    repo, _ = _with_remote(tmp_path)
    with pytest.raises(FactoryError) as caught:
        _review_boundary(locate_repository(repo))
    text = caught.value.shown()
    assert text.startswith("factory: batch-review-boundary: ")
    assert "remote origin has no default branch" in text
    assert "push that branch to it, or point its HEAD at a branch it has" in text
    assert "with its default branch fetched here" in text


def test_the_same_remote_with_its_head_on_a_pushed_branch_is_admitted(tmp_path: Path) -> None:
    """The twin: the only difference is the remote's HEAD."""
    repo, bare = _with_remote(tmp_path)
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    _review_boundary(locate_repository(repo))  # raises when refused

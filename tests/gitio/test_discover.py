"""discover(): the checkout owning a folder, primary or linked, found by git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.gitio.discover import NotARepository, discover
from tests.support.git import add_linked_worktree, git, init_repo


def test_a_subfolder_and_a_symlinked_alias_name_the_same_checkout(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", {"a/b/c.txt": "x\n"})
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    for folder in (repo / "a" / "b", alias / "a"):
        wt = discover(folder)
        assert wt.root == Path(os.path.realpath(repo))
        assert wt.common_dir == wt.git_dir == wt.root / ".git"


def test_a_linked_worktree_shares_the_common_dir(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    linked = discover(add_linked_worktree(repo, tmp_path / "wt"))
    assert linked.common_dir == Path(os.path.realpath(repo)) / ".git"
    assert linked.git_dir != linked.common_dir


@pytest.mark.parametrize("where", ["plain", "bare", "git-dir", "missing"])
def test_not_a_checkout_is_refused(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "x"
    if where == "plain":
        folder.mkdir()
    elif where == "bare":
        git(tmp_path, "init", "-q", "--bare", str(folder))
    elif where == "git-dir":
        folder = init_repo(tmp_path / "repo") / ".git"
    with pytest.raises(NotARepository):
        discover(folder)

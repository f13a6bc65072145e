"""The index as a stat cache for the raw snapshot: the same tree as reading every file,
and never trusted where the index blob is not the raw bytes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from factory.gitio import snapshot as raw_snapshot
from factory.gitio.indexcache import index_stat_cache
from tests.support.git import git, init_repo


def _settle(repo: Path) -> None:
    """Let the racy window pass, then rewrite the index (git status refreshes it)."""
    time.sleep(0.05)
    future = time.time() + 1
    os.utime(repo / ".git" / "index", (future, future))


def _head_tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def test_the_cache_gives_the_same_tree_as_a_full_read(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {f"d/f{i}.txt": f"{i}\n" for i in range(50)})
    _settle(repo)
    (repo / "d" / "f3.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    base = _head_tree(repo)
    cache = index_stat_cache(repo, base)
    assert len(cache.entries) == 50  # every clean tracked file is vouched for
    with_cache = raw_snapshot.snapshot(repo, base, cache=cache)
    without = raw_snapshot.snapshot(repo, base)
    assert with_cache.tree == without.tree
    assert {c.path for c in with_cache.changes} == {b"d/f3.txt", b"new.txt"}


def test_a_change_within_the_racy_window_is_read_again(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "one\n"})
    base = _head_tree(repo)
    stamp = (repo / "a.txt").stat()
    (repo / "a.txt").write_text("two\n")  # same size; mtime may equal the index's tick
    os.utime(repo / "a.txt", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    snap = raw_snapshot.snapshot(repo, base, cache=index_stat_cache(repo, base))
    assert [c.path for c in snap.changes] == [b"a.txt"]  # ctime moved: never trusted


@pytest.mark.parametrize("setup", ["autocrlf", "attributes", "staged"])
def test_entries_whose_index_blob_is_not_the_raw_bytes_are_not_trusted(
    tmp_path: Path, setup: str
) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "x\n", "b.txt": "y\n"})
    if setup == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
    elif setup == "attributes":
        (repo / ".gitattributes").write_text("a.txt text eol=crlf\n")
        git(repo, "add", ".gitattributes")
    else:
        (repo / "a.txt").write_text("staged\n")
        git(repo, "add", "a.txt")
    _settle(repo)
    base = _head_tree(repo)
    cache = index_stat_cache(repo, base)
    assert b"a.txt" not in cache.entries
    if setup != "autocrlf":
        assert b"b.txt" in cache.entries  # the twin: an unaffected file is still vouched for

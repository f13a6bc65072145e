"""The derivation's listing folded into reads it already makes (issue 25, "Speed").

An agent run reads the index entries (their digest) and, in each derivation, one
``git status``; the listing the snapshot needs (:class:`factory.gitio.gitdata.Listed`)
is taken from those two instead of a ``git ls-files`` of its own. Over generated
repositories — tracked, untracked and ignored files, ignored folders holding tracked
files, a nested repository, a gitlink, intent-to-add, assume-unchanged and skip-worktree
entries, staged renames whose original path looks like a status record, deletions, an
unmerged path — the folded listing equals ``git ls-files``'s, the snapshot built on it
equals the snapshot that asks git itself, and the gitlinks and hidden entries the
admission takes from the same read equal ``git ls-files -s -v``'s. The twin: an index
changed after it was read gives a folded listing that differs, which is why the agent run
reuses a read only while the git directories' binding shows the index files unchanged
(``tests/agent/test_whole_tree_passes.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory.gitio import gitdata
from factory.gitio.index_entries import listing, parse_entries, read_index_entries
from factory.gitio.snapshot import snapshot
from tests.support.git import git, init_repo

FILES = {
    "a.txt": "alpha\n",
    "? odd name.txt": "a name that starts like a status record\n",
    "d/b.txt": "beta\n",
    "d/e/c.txt": "gamma\n",
    "logs/kept.log": "tracked although its folder is ignored\n",
    ".gitignore": "logs/\n*.tmp\n",
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def _nested(repo: Path) -> None:
    init_repo(repo / "nested", {"inner.txt": "inner\n"})


CHANGES: dict[str, Callable[[Path], object]] = {
    "untracked": lambda r: (r / "d" / "new.txt").write_text("new\n"),
    "untracked-deep": lambda r: _write(r / "x" / "y" / "z.txt", "z\n"),
    "ignored-file": lambda r: (r / "scratch.tmp").write_text("t\n"),
    "ignored-folder": lambda r: (r / "logs" / "new.log").write_text("l\n"),
    "modify": lambda r: (r / "a.txt").write_text("alpha, changed\n"),
    "delete": lambda r: (r / "d" / "b.txt").unlink(),
    "nested-repository": _nested,
    "intent-to-add": lambda r: (r / "ita.txt").write_text("i\n") or git(r, "add", "-N", "ita.txt"),
    "rename-staged": lambda r: git(r, "mv", "? odd name.txt", "renamed.txt"),
    "assume-unchanged": lambda r: git(r, "update-index", "--assume-unchanged", "d/b.txt"),
    "skip-worktree": lambda r: git(r, "update-index", "--skip-worktree", "d/e/c.txt"),
    "stage-new": lambda r: (r / "staged.txt").write_text("s\n") or git(r, "add", "staged.txt"),
    "gitlink": lambda r: git(
        r, "update-index", "--add", "--cacheinfo", f"160000,{_head(r)},vendor/lib"
    ),
}


def _unmerged(repo: Path) -> None:
    """A conflicted merge: ``a.txt`` at stages 1, 2 and 3."""
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("theirs\n")
    git(repo, "commit", "-q", "-am", "theirs")
    git(repo, "checkout", "-q", "-")
    (repo / "a.txt").write_text("ours\n")
    git(repo, "commit", "-q", "-am", "ours")
    git(repo, "merge", "-q", "other", check=False)


def _same(a: gitdata.Listed, b: gitdata.Listed) -> None:
    assert sorted(a.tracked) == sorted(b.tracked)
    assert sorted(a.untracked) == sorted(b.untracked)
    assert sorted(a.unmerged) == sorted(b.unmerged)
    assert a.hidden == b.hidden


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    changes=st.lists(st.sampled_from(sorted(CHANGES)), max_size=5, unique=True),
    conflict=st.booleans(),
)
def test_the_folded_listing_equals_git_ls_files(
    tmp_path_factory: pytest.TempPathFactory, changes: list[str], conflict: bool
) -> None:
    repo = init_repo(tmp_path_factory.mktemp("r") / "r", FILES)
    base = git(repo, "rev-parse", "HEAD^{tree}").strip()
    if conflict:
        _unmerged(repo)
    for name in changes:
        CHANGES[name](repo)
    status, ignored = gitdata.status_and_ignored(repo)
    index = read_index_entries(repo)
    folded = gitdata.listed_from(index, status)
    _same(folded, gitdata.list_files(repo))
    # the admission's reading of the same entries: gitlinks and hidden ones
    assert (dict(index.gitlinks), index.hidden) == tuple(gitdata.index_flags(repo))
    if not conflict:
        asked = snapshot(repo, base, ignored_folders=ignored)
        built = snapshot(repo, base, ignored_folders=ignored, listed=folded)
        assert (built.tree, built.changes, built.problems, built.paths, built.hidden) == (
            asked.tree,
            asked.changes,
            asked.problems,
            asked.paths,
            asked.hidden,
        )


def test_twin_an_index_changed_after_its_read_lists_otherwise(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", FILES)
    read = read_index_entries(repo)
    (repo / "later.txt").write_text("staged after the read\n")
    git(repo, "add", "later.txt")
    status, _ = gitdata.status_and_ignored(repo)
    stale = gitdata.listed_from(read, status)
    assert b"later.txt" not in stale.tracked
    assert b"later.txt" in gitdata.list_files(repo).tracked


def test_the_status_walk_skips_a_renamed_entrys_original_path() -> None:
    status = b"2 R. N... 100644 100644 100644 aa bb R100 new.txt\0? old\0? real.txt\0"
    assert gitdata.untracked_in_status(status) == [b"real.txt"]


def test_the_listing_tags_entries_as_ls_files_v_does() -> None:
    def row(path: str, stage: str, flags: str) -> bytes:
        meta = f"100644 {'0' * 40} {stage}\t{path}\0"
        return meta.encode() + f"  size: 1\tflags: {flags}\n".encode()

    out = b"".join(
        [
            row("plain", "0", "0"),
            row("assumed", "0", "8000"),
            row("skipped", "0", "40000000"),
            row("u", "1", "1000"),
            row("u", "2", "2000"),
            row("v", "2", "a000"),  # unmerged but assume-unchanged: ls-files -v says "m"
        ]
    )
    tracked, unmerged, hidden = listing(parse_entries(out))
    assert tracked == (b"plain", b"assumed", b"skipped", b"v")
    assert unmerged == (b"u",)
    assert hidden == 3

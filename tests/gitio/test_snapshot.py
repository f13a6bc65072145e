"""The raw-bytes snapshot API (``factory.gitio.snapshot``), independent of the agent run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.gitio import snapshot as snap_mod
from factory.gitio.gitdata import TreeEntry
from factory.gitio.rawfs import RawReader
from factory.gitio.snapshot import decode_divergence, encode_divergence, snapshot, take_baseline
from tests.support.git import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "b\n", ".gitignore": "ign/\n"})


def head_tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def blob_bytes(repo: Path, tree: str, path: str) -> bytes:
    import subprocess

    return subprocess.run(
        ["git", "cat-file", "blob", f"{tree}:{path}"], cwd=repo, capture_output=True, check=True
    ).stdout


def test_the_tree_holds_exactly_the_bytes_on_disk(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")  # git add would store LF
    (repo / "new.txt").write_bytes(b"x\r\ny\r\n")
    (repo / "a.txt").unlink()
    s = snapshot(repo, head_tree(repo))
    assert [(c.path, c.state) for c in s.changes] == [(b"a.txt", "deleted"), (b"new.txt", "added")]
    assert blob_bytes(repo, s.tree, "new.txt") == b"x\r\ny\r\n"
    assert s.problems == () and s.hidden == 0
    assert set(s.paths) == {b".gitignore", b"d/b.txt", b"new.txt"}


def test_twin_an_untouched_worktree_is_the_base_tree(repo: Path) -> None:
    s = snapshot(repo, head_tree(repo))
    assert s.changes == () and s.tree == head_tree(repo)


def test_names_git_would_quote_are_stored(repo: Path) -> None:
    names = ["line\nbreak.txt", 'quote".txt', "back\\slash.txt", "tab\t.txt", "é.txt"]
    for n in names:
        (repo / n).write_text(n)
    (repo / os.fsdecode(b"raw\xff.txt")).write_text("raw")
    s = snapshot(repo, head_tree(repo))
    assert sorted(c.path for c in s.changes) == sorted(
        [n.encode() for n in names] + [b"raw\xff.txt"]
    )


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda r: (r / "link").symlink_to("a.txt"), "symlink"),
        (lambda r: os.mkfifo(r / "pipe"), "special-file"),
        (lambda r: init_repo(r / "nested"), "nested-repository"),
        (
            lambda r: (
                os.rename(r / "d", r / "real"),
                (r / "d").symlink_to("real"),
            ),
            "below-symlink",
        ),
    ],
    ids=["symlink", "fifo", "nested-repo", "below-symlink"],
)
def test_what_cannot_be_bound_is_a_problem(repo: Path, make: object, reason: str) -> None:
    make(repo)  # type: ignore[operator]
    s = snapshot(repo, head_tree(repo))
    assert reason in {p.reason for p in s.problems}
    assert s.tree == head_tree(repo)  # no tree is written for a snapshot with problems


def test_twin_the_same_entries_ignored_are_no_problem(repo: Path) -> None:
    (repo / "ign").mkdir()
    (repo / "ign" / "link").symlink_to("../a.txt")
    os.mkfifo(repo / "ign" / "pipe")
    init_repo(repo / "ign" / "nested")
    assert snapshot(repo, head_tree(repo)).problems == ()


def test_a_baseline_keeps_checkout_conversions_out_of_the_change(repo: Path) -> None:
    (repo / "a.txt").write_bytes(b"a\r\n")  # as a converting checkout would have written it
    base = take_baseline(repo, head_tree(repo))
    assert base.divergent == {b"a.txt": TreeEntry("100644", base.divergent[b"a.txt"].oid)}
    assert snapshot(repo, head_tree(repo), base).changes == ()
    (repo / "a.txt").write_bytes(b"A\r\n")
    assert [c.path for c in snapshot(repo, head_tree(repo), base).changes] == [b"a.txt"]


def test_divergence_round_trips_and_malformed_bytes_are_refused() -> None:
    entries = {b"x\ny": TreeEntry("100755", "a" * 40), b"b": TreeEntry("100644", "b" * 40)}
    assert decode_divergence(encode_divergence(entries)) == entries
    assert decode_divergence(b"") == {}
    with pytest.raises(ValueError):
        decode_divergence(b"100644\tno-id\0")


def test_a_same_size_rewrite_right_after_a_read_is_seen(repo: Path) -> None:
    first = snapshot(repo, head_tree(repo))
    st = (repo / "a.txt").stat()
    (repo / "a.txt").write_text("z\n")
    os.utime(repo / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
    again = snapshot(repo, head_tree(repo), cache=first.cache)
    assert [c.path for c in again.changes] == [b"a.txt"]


def test_old_unchanged_files_are_not_read_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = snapshot(repo, head_tree(repo))
    first.cache.started_ns += 10 * 10**9  # as if the files were written long before
    reads: list[bytes] = []
    real = RawReader._read_file

    def spy(self: RawReader, full: bytes, stamp: object) -> object:
        reads.append(full)
        return real(self, full, stamp)  # type: ignore[arg-type]

    monkeypatch.setattr(snap_mod.RawReader, "_read_file", spy)
    assert snapshot(repo, head_tree(repo), cache=first.cache).changes == ()
    assert reads == []

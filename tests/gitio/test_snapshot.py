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
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    (repo / "a.txt").unlink()
    git(repo, "checkout", "--", "a.txt")  # written converted: CRLF on disk, LF stored
    assert (repo / "a.txt").read_bytes() == b"a\r\n" and git(repo, "status", "--porcelain") == ""
    base = take_baseline(repo, head_tree(repo))
    assert set(base.divergent) == {b"a.txt"}  # d/b.txt was checked out before the attribute
    assert base.divergent[b"a.txt"].mode == "100644"
    assert snapshot(repo, head_tree(repo)).changes != ()  # without it: "changed"
    assert snapshot(repo, head_tree(repo), base).changes == ()
    (repo / "a.txt").write_bytes(b"A\r\n")
    assert [c.path for c in snapshot(repo, head_tree(repo), base).changes] == [b"a.txt"]


def test_twin_a_checkout_nothing_converts_has_no_divergence(repo: Path) -> None:
    base = take_baseline(repo, head_tree(repo))
    assert base.divergent == {}
    assert len(base.cache.entries) == 3  # every base path looked at (lstat)


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


def _racy_filtered_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repo whose every file passes a clean filter (which leaves a marker) and whose
    index entries are all racily clean (the index's mtime equals the files')."""
    repo = init_repo(tmp_path / "f", {"a.txt": "a\n", ".gitattributes": "* filter=m\n"})
    mark = tmp_path / "ran"
    script = tmp_path / "clean.sh"
    script.write_text(f"#!/bin/sh\n: > '{mark}'\ncat\n")
    script.chmod(0o755)
    git(repo, "config", "filter.m.clean", str(script))
    index = repo / ".git" / "index"
    st = (repo / "a.txt").stat()
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns))
    return repo, mark


def test_writing_private_indexes_never_runs_a_filter_on_racy_entries(tmp_path: Path) -> None:
    from factory.gitio.worktree import index_tree, locate

    repo, mark = _racy_filtered_repo(tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "w", str(wt))
    st = (wt / "a.txt").stat()
    os.utime(
        Path(git(wt, "rev-parse", "--git-path", "index").strip()).resolve(),
        ns=(st.st_atime_ns, st.st_mtime_ns),
    )
    (wt / "new.txt").write_text("n\n")
    s = snapshot(wt, head_tree(wt))
    assert [c.path for c in s.changes] == [b"new.txt"]
    assert index_tree(locate(wt)) == head_tree(wt)
    assert not mark.exists()


def test_twin_git_writing_a_copy_with_racy_entries_does_run_it(tmp_path: Path) -> None:
    import shutil
    import subprocess

    repo, mark = _racy_filtered_repo(tmp_path)
    copy = tmp_path / "index-copy"
    shutil.copy2(repo / ".git" / "index", copy)
    env = {**os.environ, "GIT_INDEX_FILE": str(copy)}
    blob = git(repo, "rev-parse", "HEAD:a.txt").strip()
    record = f"100644 {blob}\tcopy-of-a.txt\0".encode()
    subprocess.run(
        ["git", "update-index", "-z", "--index-info"],
        cwd=repo,
        env=env,
        input=record,
        capture_output=True,
        check=True,
    )
    assert mark.exists()  # writing the copy re-read the racy a.txt through the filter

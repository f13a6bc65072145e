"""``factory.gitio.gitdata``: one ``git status`` gives both the status bytes and the
ignored folders, with exactly the bytes of a plain status."""

from __future__ import annotations

from pathlib import Path

from factory.gitio.gitdata import status_and_ignored, status_bytes
from tests.support.git import git, init_repo


def test_status_with_ignored_cut_out_is_the_plain_status(tmp_path: Path) -> None:
    repo = init_repo(
        tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "build/\n*.log\n"}
    )
    git(repo, "mv", "b.txt", "! renamed.txt")  # a staged rename; its new name starts "! "
    (repo / "a.txt").write_text("changed\n")
    (repo / "! untracked").write_text("x")
    (repo / "build" / "deep").mkdir(parents=True)
    (repo / "build" / "deep" / "o.bin").write_text("x")
    (repo / "x.log").write_text("x")
    status, folders = status_and_ignored(repo)
    assert status == status_bytes(repo)
    assert b"! renamed.txt" in status and b"! untracked" in status
    assert folders == {b"build"}


def test_twin_a_clean_checkout_has_empty_status_and_no_ignored_folder(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    assert status_and_ignored(repo) == (b"", set())


def test_one_diff_tree_gives_the_entries_and_the_plain_patch(tmp_path: Path) -> None:
    import subprocess

    from factory.gitio.difftree import DIFF_FLAGS
    from factory.gitio.gitdata import diff_entries, diff_with_patch

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "gone.txt": "g\n"})
    base = git(repo, "rev-parse", "HEAD^{tree}").strip()
    (repo / "a.txt").write_text("changed\n")
    (repo / "gone.txt").unlink()
    (repo / 'we"ird\tname.txt').write_text("w\n")
    (repo / "bin.dat").write_bytes(bytes(range(256)))
    git(repo, "add", "-A")
    tree = git(repo, "write-tree").strip()
    entries, patch = diff_with_patch(repo, base, tree)
    plain = subprocess.run(
        ["git", "diff-tree", "-p", "--binary", *DIFF_FLAGS, base, tree],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    assert patch == plain and b"GIT binary patch" in patch
    assert entries == diff_entries(repo, base, tree) and len(entries) == 4
    assert diff_with_patch(repo, base, base) == ({}, b"")  # twin: no change, no patch


def test_one_index_listing_gives_the_gitlinks_and_the_hidden_entries(tmp_path: Path) -> None:
    """``index_flags`` reads ``ls-files -s -v`` once and answers what ``ls-files -s`` (the
    gitlinks) and ``ls-files -v`` (the hidden entries) answered apart."""
    from factory.gitio.gitdata import index_flags

    files = {"a.txt": "a\n", "b.txt": "b\n", "c d.txt": "c\n", "S x.txt": "s\n"}
    repo = init_repo(tmp_path / "r", files)
    sub = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},vendor/lib")
    assert index_flags(repo) == ({b"vendor/lib": sub}, 0)  # twin: nothing hidden
    git(repo, "update-index", "--assume-unchanged", "a.txt")
    git(repo, "update-index", "--skip-worktree", "c d.txt")
    git(repo, "update-index", "--skip-worktree", "--assume-unchanged", "S x.txt")
    assert index_flags(repo) == ({b"vendor/lib": sub}, 3)

"""The gates' index-vouched candidate equals the raw-bytes snapshot wherever it answers,
and refuses (None: the caller takes the raw snapshot) wherever git could store or see
something other than the raw bytes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory.gitio.discover import discover
from factory.gitio.snapshot import snapshot
from factory.review.gates.fastpath import fast_candidate
from tests.support.git import git, init_repo

FILES = {
    "a.txt": "alpha\n",
    "dir/b.py": "print('b')\n",
    "dir/c.md": "# c\n",
    ".gitignore": "*.log\n",
}


def _both(repo: Path) -> tuple[tuple[str, tuple[str, ...]] | None, str, tuple[str, ...]]:
    wt = discover(repo)
    head = git(repo, "rev-parse", "HEAD^{tree}").strip()
    raw = snapshot(wt.root, head)
    paths = tuple(sorted(os.fsdecode(c.path) for c in raw.changes))
    fast = fast_candidate(wt, head)
    return (None if fast is None else (fast.tree, fast.paths)), raw.tree, paths


def _modify(r: Path) -> None:
    (r / "a.txt").write_text("alpha, changed\n")


def _untracked(r: Path) -> None:
    (r / "dir" / "new.txt").write_text("new\n")
    (r / "debug.log").write_text("ignored\n")


def _delete(r: Path) -> None:
    (r / "dir" / "c.md").unlink()


def _exec_bit(r: Path) -> None:
    os.chmod(r / "dir" / "b.py", 0o755)


def _staged_then_edited(r: Path) -> None:
    (r / "a.txt").write_text("staged\n")
    git(r, "add", "a.txt")
    (r / "a.txt").write_text("staged, then edited\n")


def _staged_new(r: Path) -> None:
    (r / "staged.txt").write_text("added to the index\n")
    git(r, "add", "staged.txt")


def _crlf(r: Path) -> None:
    (r / "a.txt").write_bytes(b"alpha\r\n")


SAME: dict[str, Callable[[Path], object]] = {
    "modified": _modify,
    "untracked-and-ignored": _untracked,
    "deleted": _delete,
    "exec-bit": _exec_bit,
    "staged-then-edited": _staged_then_edited,
    "staged-new-file": _staged_new,
    "crlf-bytes": _crlf,
    "nothing": lambda r: None,
}


@pytest.mark.parametrize("name", list(SAME))
def test_the_fast_candidate_is_the_raw_snapshot(name: str, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", dict(FILES))
    SAME[name](repo)
    fast, tree, paths = _both(repo)
    assert fast == (tree, paths)


def _symlink(r: Path) -> None:
    os.symlink("a.txt", r / "link")


def _assume_unchanged(r: Path) -> None:
    git(r, "update-index", "--assume-unchanged", "a.txt")
    (r / "a.txt").write_text("hidden change\n")


def _autocrlf(r: Path) -> None:
    git(r, "config", "core.autocrlf", "true")


def _text_attribute(r: Path) -> None:
    (r / ".gitattributes").write_text("*.txt text eol=lf\n")


def _nested_repo(r: Path) -> None:
    init_repo(r / "nested", {"x": "y\n"})


def _staged_deletion(r: Path) -> None:
    git(r, "rm", "-q", "--cached", "a.txt")


def _filemode_off(r: Path) -> None:
    git(r, "config", "core.fileMode", "false")


FALLBACK: dict[str, Callable[[Path], None]] = {
    "symlink": _symlink,
    "assume-unchanged": _assume_unchanged,
    "autocrlf": _autocrlf,
    "text-attribute": _text_attribute,
    "nested-repository": _nested_repo,
    "staged-deletion": _staged_deletion,
    "filemode-off": _filemode_off,
}


@pytest.mark.parametrize("name", list(FALLBACK))
def test_the_fast_path_steps_aside_where_git_might_not_see_raw_bytes(
    name: str, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "r", dict(FILES))
    FALLBACK[name](repo)
    assert _both(repo)[0] is None


def test_unconverting_attributes_keep_the_fast_path(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", {**FILES, ".gitattributes": "* -text\n"})
    _crlf(repo)
    fast, tree, paths = _both(repo)
    assert fast == (tree, paths)


OPS = st.lists(
    st.sampled_from(
        ["edit-a", "edit-b", "new", "delete-c", "chmod-b", "stage-a", "stage-all", "crlf-a"]
    ),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_random_sequences_of_edits_agree(
    ops: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    repo = init_repo(tmp_path_factory.mktemp("prop") / "r", dict(FILES))
    for i, op in enumerate(ops):
        if op == "edit-a":
            (repo / "a.txt").write_text(f"alpha {i}\n")
        elif op == "edit-b":
            (repo / "dir" / "b.py").write_text(f"print({i})\n")
        elif op == "new":
            (repo / f"new{i}.txt").write_text(f"{i}\n")
        elif op == "delete-c" and (repo / "dir" / "c.md").exists():
            (repo / "dir" / "c.md").unlink()
        elif op == "chmod-b":
            os.chmod(repo / "dir" / "b.py", 0o755 if i % 2 == 0 else 0o644)
        elif op == "stage-a":
            git(repo, "add", "a.txt")
        elif op == "stage-all":
            git(repo, "add", "-A")
        elif op == "crlf-a":
            (repo / "a.txt").write_bytes(b"alpha\r\n")
    fast, tree, paths = _both(repo)
    assert fast is None or fast == (tree, paths)


def test_a_rederivation_reuses_the_tree_only_while_nothing_it_rests_on_moved(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "r", dict(FILES))
    _modify(repo)
    wt = discover(repo)
    head = git(repo, "rev-parse", "HEAD^{tree}").strip()
    first = fast_candidate(wt, head)
    assert first is not None and fast_candidate(wt, head, first) is first
    (repo / "a.txt").write_text("alpha, changed again\n")  # the same status line: " M a.txt"
    again = fast_candidate(wt, head, first)
    assert again is not None and again is not first and again.tree != first.tree
    assert again.tree == snapshot(wt.root, head).tree

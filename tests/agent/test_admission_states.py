"""Admission refuses a worktree in the middle of something (issue 8 §2).

Every in-progress operation git can leave in a worktree, made with real git, and every
kind of lock file: exit 2 with a code naming the state, no provider called, nothing
written, every file of both git directories as it was (bytes and mtime). Observed before:
a stale ``index.lock`` → the run completed with exit 0. Twins: the same worktree after
the operation is aborted (or the lock removed) is admitted and completes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.conftest import Layout
from tests.agent.test_admission import admitted, refused, req
from tests.gitio.plant import common_dir
from tests.support.git import git


def git_dir(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip())


def diverge(wt: Path) -> None:
    """``other``: two commits (README conflicting, o2.txt); ``work``: two README commits."""
    git(wt, "checkout", "-q", "-b", "other")
    (wt / "README.md").write_text("other\n")
    git(wt, "commit", "-qam", "other")
    (wt / "o2.txt").write_text("o2\n")
    git(wt, "add", "o2.txt")
    git(wt, "commit", "-qm", "o2")
    git(wt, "checkout", "-q", "work")
    for text in ("work\n", "work2\n"):
        (wt / "README.md").write_text(text)
        git(wt, "commit", "-qam", text.strip())


def quiet(wt: Path, *args: str) -> None:
    git(wt, "-c", "core.editor=true", *args, check=False)


def sequencer_only(wt: Path) -> None:
    quiet(wt, "cherry-pick", "other~1", "other")  # the first conflicts
    git(wt, "checkout", "--theirs", "README.md")
    git(wt, "add", "README.md")
    quiet(wt, "commit", "--no-edit")  # resolved, but the sequence is not continued


def am(wt: Path) -> None:
    patch = wt.parent / "other.patch"
    patch.write_bytes(git(wt, "format-patch", "-1", "--stdout", "other~1").encode())
    quiet(wt, "am", str(patch))


def notes_merge(wt: Path) -> None:
    # What `git notes merge` leaves on a conflict (its worktree folder and two refs).
    gd = git_dir(wt)
    head = git(wt, "rev-parse", "HEAD").strip()
    (gd / "NOTES_MERGE_PARTIAL").write_text(head + "\n")
    (gd / "NOTES_MERGE_REF").write_text("ref: refs/notes/commits\n")


# state code → (start the operation, abort it)
OPERATIONS: dict[str, tuple[Callable[[Path], None], Callable[[Path], None]]] = {
    "merge-in-progress": (
        lambda wt: quiet(wt, "merge", "other"),
        lambda wt: quiet(wt, "merge", "--abort"),
    ),
    "rebase-in-progress": (
        lambda wt: quiet(wt, "rebase", "--merge", "other"),
        lambda wt: quiet(wt, "rebase", "--abort"),
    ),
    "rebase-in-progress/apply": (
        lambda wt: quiet(wt, "rebase", "--apply", "other"),
        lambda wt: quiet(wt, "rebase", "--abort"),
    ),
    "rebase-in-progress/stopped-clean": (
        lambda wt: quiet(wt, "rebase", "--exec", "false", "HEAD~1"),
        lambda wt: quiet(wt, "rebase", "--abort"),
    ),
    "am-in-progress": (am, lambda wt: quiet(wt, "am", "--abort")),
    "cherry-pick-in-progress": (
        lambda wt: quiet(wt, "cherry-pick", "other~1"),
        lambda wt: quiet(wt, "cherry-pick", "--abort"),
    ),
    "revert-in-progress": (
        lambda wt: quiet(wt, "revert", "HEAD~1"),
        lambda wt: quiet(wt, "revert", "--abort"),
    ),
    "sequencer-in-progress": (sequencer_only, lambda wt: quiet(wt, "cherry-pick", "--abort")),
    "bisect-in-progress": (
        lambda wt: quiet(wt, "bisect", "start"),
        lambda wt: quiet(wt, "bisect", "reset"),
    ),
    "notes-merge-in-progress": (
        notes_merge,
        lambda wt: [os.unlink(git_dir(wt) / n) for n in ("NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF")],
    ),
}

# state code → (folder: "git" or "common", relative path of the lock)
LOCKS: dict[str, tuple[str, str]] = {
    "index-locked": ("git", "index.lock"),
    "head-locked": ("git", "HEAD.lock"),
    "ref-locked": ("common", "refs/heads/main.lock"),
    "ref-locked/packed-refs": ("common", "packed-refs.lock"),
    "ref-locked/reflog": ("git", "logs/HEAD.lock"),
    "ref-locked/orig-head": ("git", "ORIG_HEAD.lock"),
    "config-locked": ("common", "config.lock"),
    "git-locked": ("common", "shallow.lock"),
}


def state_of(layout: Layout) -> dict[str, tuple[int, str]]:
    """(mtime_ns, sha256) of every file of both git directories, objects included."""
    out: dict[str, tuple[int, str]] = {}
    for top in {git_dir(layout.wt), common_dir(layout.wt)}:
        for folder, _, files in os.walk(top):
            for name in files:
                p = Path(folder) / name
                out[str(p)] = (p.lstat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.mark.parametrize("row", sorted(OPERATIONS))
async def test_an_operation_in_progress_is_refused_by_name(layout: Layout, row: str) -> None:
    diverge(layout.wt)
    start, abort = OPERATIONS[row]
    start(layout.wt)
    before = state_of(layout)
    await refused(req(layout), row.partition("/")[0])
    assert state_of(layout) == before
    abort(layout.wt)  # twin: the same worktree, the operation aborted
    await admitted(req(layout))


@pytest.mark.parametrize("row", sorted(LOCKS))
async def test_a_lock_file_is_refused_by_name_and_left_alone(layout: Layout, row: str) -> None:
    where, rel = LOCKS[row]
    lock = (git_dir(layout.wt) if where == "git" else common_dir(layout.wt)) / rel
    lock.write_bytes(b"left by a crashed git\n")
    before = state_of(layout)
    await refused(req(layout), row.partition("/")[0])
    assert state_of(layout) == before and lock.read_bytes() == b"left by a crashed git\n"
    lock.unlink()  # twin: the lock gone
    await admitted(req(layout))


async def test_twin_locks_of_other_checkouts_and_object_storage_are_not_ours(
    layout: Layout,
) -> None:
    common = common_dir(layout.wt)
    for rel in ("index.lock", "HEAD.lock", "objects/maintenance.lock"):
        (common / rel).write_text("the primary checkout's own\n")
    await admitted(req(layout))

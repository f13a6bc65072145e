"""Is a worktree in the middle of something? In-progress operations and lock files (issue 8 §2).

Both are read from the file system only (names, never contents), so deciding changes
nothing: no lock is taken, no file is removed or rewritten.

:func:`in_progress` names the operation whose state git keeps in the worktree's own git
dir: a merge (``MERGE_HEAD``), a rebase of either backend (``rebase-merge/``,
``rebase-apply/``), ``git am`` (``rebase-apply/applying``), a cherry-pick
(``CHERRY_PICK_HEAD``), a revert (``REVERT_HEAD``), a stopped multi-commit cherry-pick or
revert (``sequencer/``), a bisect (``BISECT_START``/``BISECT_LOG``) or a notes merge
(``NOTES_MERGE_*``). A user's next ``git commit`` there would not be an ordinary commit.

:func:`lock_files` finds every ``*.lock`` git leaves while it writes (or after it crashed)
in the worktree's git dir and in the shared parts of the common dir: the index, HEAD,
refs and their logs, ``packed-refs``, the configuration, ``shallow``. Object storage, the
other worktrees' own folders, submodules' repositories (``modules/`` of either git dir)
and the primary checkout's own
index and HEAD locks are not this worktree's state and are not looked at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# (what exists in the worktree's git dir, state code), first match wins.
_OPERATIONS: tuple[tuple[str, str], ...] = (
    ("rebase-apply/applying", "am-in-progress"),
    ("rebase-apply", "rebase-in-progress"),
    ("rebase-merge", "rebase-in-progress"),
    ("MERGE_HEAD", "merge-in-progress"),
    ("CHERRY_PICK_HEAD", "cherry-pick-in-progress"),
    ("REVERT_HEAD", "revert-in-progress"),
    ("sequencer", "sequencer-in-progress"),
    ("BISECT_START", "bisect-in-progress"),
    ("BISECT_LOG", "bisect-in-progress"),
    ("NOTES_MERGE_PARTIAL", "notes-merge-in-progress"),
    ("NOTES_MERGE_REF", "notes-merge-in-progress"),
    ("NOTES_MERGE_WORKTREE", "notes-merge-in-progress"),
)
# Parts of the common dir that are not this worktree's state (see the module docstring).
_COMMON_SKIP = frozenset({"objects", "worktrees", "modules", "lfs", "index.lock", "HEAD.lock"})


@dataclass(frozen=True, slots=True)
class Lock:
    """A lock file: where it is (``git-dir/…`` or ``common-dir/…``) and its state code."""

    label: str
    code: str


def in_progress(git_dir: Path) -> str | None:
    """The state code of the operation in progress in ``git_dir``, or ``None``."""
    for rel, code in _OPERATIONS:
        if os.path.lexists(git_dir / rel):
            return code
    return None


def _lock_code(rel: str) -> str:
    name = rel.rpartition("/")[2]
    if rel == "index.lock":
        return "index-locked"
    if rel == "HEAD.lock":
        return "head-locked"
    if (
        rel.startswith(("refs/", "logs/"))
        or rel == "packed-refs.lock"
        or name.endswith("HEAD.lock")
    ):
        return "ref-locked"
    if rel in ("config.lock", "config.worktree.lock"):
        return "config-locked"
    return "git-locked"


def _walk(top: Path, skip: frozenset[str]) -> list[str]:
    found: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(top / rel if rel else top)
        except OSError:
            continue
        with it:
            for de in it:
                path = f"{rel}/{de.name}" if rel else de.name
                if not rel and de.name in skip:
                    continue
                if de.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif de.name.endswith(".lock"):
                    found.append(path)
    return sorted(found)


def lock_files(git_dir: Path, common_dir: Path) -> list[Lock]:
    """Every lock file of the worktree's state (see the module docstring), sorted."""
    own = _walk(git_dir, frozenset({"modules"}))  # a linked worktree's submodule repositories
    locks = [Lock(f"git-dir/{rel}", _lock_code(rel)) for rel in own]
    if common_dir != git_dir:
        locks += common_lock_files(common_dir)
    return locks


def common_lock_files(common_dir: Path) -> list[Lock]:
    """The lock files of the shared part of the common dir alone (``config.lock``,
    ``packed-refs.lock``, ``shallow.lock``, refs, logs, …): what a linked worktree that does
    not exist yet would find there once created."""
    return [Lock(f"common-dir/{rel}", _lock_code(rel)) for rel in _walk(common_dir, _COMMON_SKIP)]

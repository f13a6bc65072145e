"""Admission of an agent run (SPEC A-1): every refusal happens here, before any effect.

:func:`admit` checks, in order, and raises :class:`AdmissionRefused` (exit 2) by name:

* ``task-required`` — the task is empty or only whitespace;
* ``timeout-out-of-range`` — ``--timeout-ms`` outside 1000–1800000;
* ``worktree-missing`` / ``not-a-git-worktree`` / ``not-worktree-root`` /
  ``linked-worktree-required`` — see :func:`factory.gitio.worktree.locate`;
* ``receipt-inside-worktree`` / ``evidence-inside-worktree`` — the path lies inside the
  worktree or one of its git directories (common dir included), lexically or physically
  (symlink and bind-mount aliases resolve to the same device and inode);
* ``receipt-exists`` / ``evidence-exists`` — the path is already taken (any entry);
* ``receipt-folder-missing`` / ``evidence-folder-missing`` — the parent folder is missing;
* an in-progress operation, by name: ``merge-in-progress``, ``rebase-in-progress`` (either
  backend), ``am-in-progress``, ``cherry-pick-in-progress``, ``revert-in-progress``,
  ``sequencer-in-progress``, ``bisect-in-progress``, ``notes-merge-in-progress``
  (:func:`factory.gitio.state.in_progress`);
* a lock file git leaves while it writes: ``index-locked``, ``head-locked``,
  ``ref-locked``, ``config-locked``, ``git-locked`` (:func:`factory.gitio.state.lock_files`);
  the files are only looked at, never removed or changed;
* ``no-base-commit`` — HEAD is unborn;
* ``worktree-not-clean`` — staged, unstaged (mode-only included) or untracked non-ignored
  change in ``git status --porcelain=v2 -z --untracked-files=all``, or a checked-out
  submodule with any change inside it;
* ``worktree-has-special-file`` — a FIFO, socket or device git does not ignore: git's
  status does not show it and no candidate could bind it;
* ``worktree-busy`` — another run holds the worktree (:func:`hold_worktree`);
* ``worktree-hides-changes`` — an index entry is assume-unchanged or skip-worktree (sparse
  checkout): git status would not show its changes, nor would the candidate bind them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from factory.agent.control import IndexFiles, bind_control, own_index_records
from factory.errors import Refused
from factory.fsio import physically_inside
from factory.gitio.gitdata import (
    special_files,
    status_and_ignored,
    submodules_dirty,
)
from factory.gitio.index_entries import IndexEntries, read_index_entries
from factory.gitio.state import Lock, common_lock_files, in_progress, lock_files
from factory.gitio.worktree import (
    Worktree,
    commit_tree,
    head_commit,
    locate,
)

TIMEOUT_MIN_MS = 1_000
TIMEOUT_MAX_MS = 1_800_000
TIMEOUT_DEFAULT_MS = 600_000


class AdmissionRefused(Refused):
    """The run was refused before anything ran or was written (exit 2)."""


_define = AdmissionRefused.define
TASK_REQUIRED = _define("task-required", "say what the worker should do with --task")
TIMEOUT_OUT_OF_RANGE = _define(
    "timeout-out-of-range", f"pass --timeout-ms between {TIMEOUT_MIN_MS} and {TIMEOUT_MAX_MS}"
)
_OUTSIDE = "put the receipt and the evidence outside the worktree and its git directories"
RECEIPT_INSIDE_WORKTREE = _define("receipt-inside-worktree", _OUTSIDE)
EVIDENCE_INSIDE_WORKTREE = _define("evidence-inside-worktree", _OUTSIDE)
RECEIPT_EXISTS = _define("receipt-exists", "choose a new --out path")
EVIDENCE_EXISTS = _define("evidence-exists", "choose a new --evidence path (or --out)")
RECEIPT_FOLDER_MISSING = _define("receipt-folder-missing", "create the folder of --out first")
EVIDENCE_FOLDER_MISSING = _define(
    "evidence-folder-missing", "create the folder of --evidence first"
)
NO_BASE_COMMIT = _define("no-base-commit", "commit a base on the worktree's branch first")
WORKTREE_NOT_CLEAN = _define(
    "worktree-not-clean", "commit or remove them (git status shows them) and retry"
)
WORKTREE_HIDES_CHANGES = _define(
    "worktree-hides-changes",
    "clear those bits (git update-index --no-assume-unchanged / --no-skip-worktree) and retry",
)
WORKTREE_BUSY = _define("worktree-busy", "wait for the other run to end, or use another worktree")
WORKTREE_HAS_SPECIAL_FILE = _define(
    "worktree-has-special-file", "remove it, or ignore it in .gitignore, and retry"
)
_OPERATIONS = {
    "merge-in-progress": "merge",
    "rebase-in-progress": "rebase",
    "am-in-progress": "git am",
    "cherry-pick-in-progress": "cherry-pick",
    "revert-in-progress": "revert",
    "sequencer-in-progress": "multi-commit cherry-pick or revert",
    "bisect-in-progress": "bisect",
    "notes-merge-in-progress": "notes merge",
}
_IN_PROGRESS = {
    name: _define(name, "finish or abort it (git status says how) and retry")
    for name in _OPERATIONS
}
_LOCKED = {
    name: _define(name, "wait for the git command to end; if none runs, remove the lock and retry")
    for name in ("index-locked", "head-locked", "ref-locked", "config-locked", "git-locked")
}
_PLACEMENT = {
    "receipt": (RECEIPT_INSIDE_WORKTREE, RECEIPT_EXISTS, RECEIPT_FOLDER_MISSING),
    "evidence": (EVIDENCE_INSIDE_WORKTREE, EVIDENCE_EXISTS, EVIDENCE_FOLDER_MISSING),
}


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """What the caller asked for. ``evidence`` defaults to ``<receipt>.evidence``."""

    worktree: Path
    task: str
    receipt: Path
    evidence: Path | None = None
    timeout_ms: int = TIMEOUT_DEFAULT_MS


@dataclass(frozen=True, slots=True)
class Admitted:
    """An admitted run: absolute receipt/evidence paths, the worktree and its base.

    ``index_read``: the index entries the admission read, with the records of the index
    files in the git directories' binding taken just before that read; the run's entry
    reuses the read while a later binding shows the same records (the same bytes)."""

    request: AgentRequest
    worktree: Worktree
    receipt: Path
    evidence: Path
    base_commit: str
    base_tree: str
    index_read: tuple[IndexFiles | None, IndexEntries] | None = None


def _outside(path: Path, folders: Sequence[Path], what: str, flag: str) -> None:
    for folder in folders:
        if physically_inside(path, folder):
            raise _PLACEMENT[what][0](f"{flag} lies inside the worktree or its git directories")


def _free(path: Path, what: str, flag: str) -> None:
    if os.path.lexists(path):
        raise _PLACEMENT[what][1](f"{flag} already exists")
    if not path.parent.is_dir():
        raise _PLACEMENT[what][2](f"the folder of {flag} does not exist")


def _not_busy(wt: Worktree) -> None:
    """Refuse a worktree in the middle of an operation or holding a git lock file."""
    state = in_progress(wt.git_dir)
    if state is not None:
        raise _IN_PROGRESS[state](f"the worktree is in the middle of a {_OPERATIONS[state]}")
    _refuse_locks(lock_files(wt.git_dir, wt.common_dir), wt.common_dir, wt.root)


def _refuse_locks(locks: list[Lock], common_dir: Path, own_root: Path) -> None:
    if locks:
        # Another factory run of this repository creating or updating its own branch holds
        # that ref's lock for a moment: not this worktree's state (factory.runs.registry).
        from factory.runs.registry import foreign_labels, is_foreign

        foreign = foreign_labels(common_dir, None, own_root)
        locks = [k for k in locks if not is_foreign(os.fsencode(k.label), foreign)]
    if locks:
        raise _LOCKED[locks[0].code](
            f"git left a lock file ({locks[0].label}): a git command is running or crashed"
        )


def check_common_locks(common_dir: Path, worktree_to_be: Path) -> None:
    """Before a worktree is created: the lock files of the common dir it would share
    (``config-locked``, ``ref-locked`` for ``packed-refs.lock``, ``git-locked`` for
    ``shallow.lock``, …) refuse the run now, with nothing created, as the admission of the
    created worktree would refuse it afterwards (issue 24 §1)."""
    _refuse_locks(common_lock_files(common_dir), common_dir, worktree_to_be)


def check_task_and_timeout(request: AgentRequest) -> None:
    """The checks that need no worktree: ``task-required``, ``timeout-out-of-range``."""
    if not request.task.strip():
        raise TASK_REQUIRED("--task is empty")
    if not TIMEOUT_MIN_MS <= request.timeout_ms <= TIMEOUT_MAX_MS:
        raise TIMEOUT_OUT_OF_RANGE(f"--timeout-ms {request.timeout_ms} is out of range")


def output_paths(request: AgentRequest) -> tuple[Path, Path]:
    """The absolute receipt and evidence paths (evidence defaults to ``<receipt>.evidence``)."""
    receipt = Path(os.path.abspath(request.receipt))
    evidence = Path(
        os.path.abspath(request.evidence if request.evidence is not None else f"{receipt}.evidence")
    )
    return receipt, evidence


def check_outputs(
    receipt: Path, evidence: Path, folders: Sequence[Path], *, receipt_reserved: bool = False
) -> None:
    """Receipt and evidence lie outside every folder of ``folders`` (physically) and are
    free: ``*-inside-worktree``, ``*-exists``, ``*-folder-missing``. ``receipt_reserved``:
    the run itself already holds the receipt path (the creating form admits after it)."""
    _outside(receipt, folders, "receipt", "--out")
    _outside(evidence, folders, "evidence", "--evidence")
    if not receipt_reserved:
        _free(receipt, "receipt", "--out")
    _free(evidence, "evidence", "--evidence")
    if receipt == evidence:
        raise EVIDENCE_EXISTS("--out and --evidence name the same path")


def admit(request: AgentRequest, *, receipt_reserved: bool = False) -> Admitted:
    """Decide whether the run may start (SPEC A-1). Reads only; writes nothing.

    Raises:
        AdmissionRefused: with one of the codes in the module docstring.
        WorktreeRefused: the worktree is missing, not git, not its root, or not linked.
    """
    check_task_and_timeout(request)
    wt = locate(request.worktree)
    receipt, evidence = output_paths(request)
    folders = (wt.root, wt.git_dir, wt.common_dir)
    check_outputs(receipt, evidence, folders, receipt_reserved=receipt_reserved)
    _not_busy(wt)
    base = head_commit(wt)
    if base is None:
        raise NO_BASE_COMMIT("the worktree's branch has no commit yet")
    # One read of the index for the gitlinks, the hidden entries and the run's entry digest;
    # the index files' records are bound first, so a write after them is seen, not reused.
    files = own_index_records(bind_control(wt))
    index = read_index_entries(wt.root)
    status, ignored = status_and_ignored(wt.root)
    if status or submodules_dirty(wt.root, index.gitlinks):
        raise WORKTREE_NOT_CLEAN(
            "the worktree has staged, unstaged or untracked changes (factory runs no "
            "repository filter: if git status shows nothing, run it once to refresh the index)"
        )
    if special_files(wt.root, ignored):
        raise WORKTREE_HAS_SPECIAL_FILE(
            "the worktree holds a FIFO, socket or device that git does not ignore"
        )
    if index.hidden:
        raise WORKTREE_HIDES_CHANGES(
            "the worktree's index marks files assume-unchanged or skip-worktree, which hides "
            "their changes from git status and the candidate"
        )
    tree = commit_tree(wt, base)
    return Admitted(request, wt, receipt, evidence, base, tree, index_read=(files, index))


@contextlib.contextmanager
def hold_worktree(wt: Worktree) -> Iterator[None]:
    """Hold the worktree for one run: an advisory ``flock`` on its own git directory.

    Two runs admitted at once would each bind the other's edits as their candidate. The
    lock changes no byte (no lock file: the git control files stay as they were), is
    released when the run ends, and by the kernel if the process dies.

    Raises:
        AdmissionRefused: ``worktree-busy`` (exit 2) when another run holds it.
    """
    fd = os.open(wt.git_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WORKTREE_BUSY("another factory agent run is using this worktree") from None
        yield
    finally:
        os.close(fd)

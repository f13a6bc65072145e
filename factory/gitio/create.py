"""Create a fresh linked worktree whose files are the base tree's raw blobs (issue 16).

Two steps, so that a caller can reserve its own outputs in between:

* :func:`plan_worktree` (reads only) resolves the repository from any folder inside it,
  pins the base to a full commit id once, chooses the folder and the branch, lists and
  checks the base tree, and refuses bad input with exit 2 — nothing is created.
* :func:`create_worktree` (effects) claims the folder with an exclusive ``mkdir``, registers
  it with ``git worktree add --no-checkout`` (hooks switched off: ``core.hooksPath=/dev/null``
  — the branch creation would otherwise run ``reference-transaction``), then writes the
  files and the index itself (:mod:`factory.gitio.checkout`: no smudge filter, no ``ident``,
  no end-of-line conversion, no ``post-checkout``).

Nothing here prunes, repairs, unlocks or removes a worktree registration, and nothing
removes what it created when a later step fails: the folder stays for the user to look at.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Failure
from factory.fsio import physically_inside
from factory.gitio.checkout import TreeEntry, list_tree, write_index, write_tree_files
from factory.gitio.repository import Repository, RepositoryRefused, locate_repository, resolve_base
from factory.gitio.run import GitFailure, run_git, try_git
from factory.gitio.worktree import Worktree

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
BRANCH_PREFIX = "factory/run-"
DIR_INFIX = ".factory-run-"


class CreateRefused(RepositoryRefused):
    """The folder or the branch cannot be used; nothing was created (exit 2)."""


class CreateFailed(Failure):
    """Creating the worktree failed after it began (exit 4); what exists stays."""


_refuse = CreateRefused.define
WORKTREE_DIR_EXISTS = _refuse("worktree-dir-exists", "name a new folder (factory creates it)")
WORKTREE_DIR_FOLDER_MISSING = _refuse(
    "worktree-dir-folder-missing", "create the folder that will hold --worktree-dir first"
)
WORKTREE_DIR_NOT_WRITABLE = _refuse("worktree-dir-not-writable", "choose a writable place")
WORKTREE_DIR_INSIDE_REPOSITORY = _refuse(
    "worktree-dir-inside-repository", "choose a folder outside the repository and its worktrees"
)
WORKTREE_DIR_REGISTERED = _refuse(
    "worktree-dir-registered", "choose another folder (factory never prunes registrations)"
)
BRANCH_INVALID = _refuse(
    "worktree-branch-invalid",
    'pass a valid name (git check-ref-format), or --branch "" to detach HEAD',
)
BRANCH_EXISTS = _refuse(
    "worktree-branch-exists", 'pass a new --branch name, or --branch "" to detach HEAD'
)
_STAYS = "the folder stays for inspection; rerun with a new --worktree-dir or --branch"
WORKTREE_DIR_TAKEN = CreateFailed.define("worktree-dir-taken", _STAYS)
WORKTREE_CREATE_FAILED = CreateFailed.define("worktree-create-failed", _STAYS)
WORKTREE_CREATE_MISMATCH = CreateFailed.define(
    "worktree-create-mismatch", "inspect the worktree: something moved its HEAD"
)


def new_run_id() -> str:
    """A short random run id (12 hex digits) naming the default folder and branch."""
    return secrets.token_hex(6)


@dataclass(frozen=True, slots=True)
class WorktreeSpec:
    """What the caller asked for.

    ``base``: a revision (default ``HEAD`` of ``repo``). ``path``: the new folder (default:
    beside the repository, named after the run). ``branch``: ``None`` for
    ``factory/run-<run id>``, ``""`` for a detached HEAD, else the new branch's name.
    """

    repo: Path
    base: str | None = None
    path: Path | None = None
    branch: str | None = None


@dataclass(frozen=True, slots=True)
class WorktreePlan:
    """Everything :func:`create_worktree` needs, decided once (``base_commit`` is the full
    commit id; ``path`` is physical, the path git and the receipt will name)."""

    repository: Repository
    base_commit: str
    base_tree: str
    path: Path
    branch: str | None
    run_id: str
    entries: tuple[TreeEntry, ...]


def _beside(anchor: Path, repo: Repository, run_id: str) -> Path:
    stem = anchor.name
    if anchor == repo.common_dir and stem.endswith(".git") and len(stem) > 4:
        stem = stem[:-4]
    return anchor.parent / f"{stem or 'repository'}{DIR_INFIX}{run_id}"


def _default_path(repo: Repository, run_id: str) -> Path:
    """Beside the anchor; when that lies inside another of the repository's worktrees (a
    linked worktree nested in the main checkout), beside that worktree instead."""
    anchor = repo.anchor
    holders = [w for w in repo.worktrees if w.is_dir()]
    path = _beside(anchor, repo, run_id)
    for _ in range(len(holders)):
        holder = next((w for w in holders if w != anchor and physically_inside(path, w)), None)
        if holder is None:
            break
        anchor = Path(os.path.realpath(holder))
        path = _beside(anchor, repo, run_id)
    return path


def _check_path(repo: Repository, raw: Path) -> Path:
    absolute = Path(os.path.abspath(raw))
    if os.path.lexists(absolute):
        raise WORKTREE_DIR_EXISTS("--worktree-dir already exists")
    parent = absolute.parent
    if not parent.is_dir():
        raise WORKTREE_DIR_FOLDER_MISSING("the folder of --worktree-dir does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WORKTREE_DIR_NOT_WRITABLE("the folder of --worktree-dir is not writable")
    path = Path(os.path.realpath(parent)) / absolute.name
    folders = [repo.common_dir, repo.anchor, *(w for w in repo.worktrees if w.is_dir())]
    if any(physically_inside(path, f) for f in folders):
        raise WORKTREE_DIR_INSIDE_REPOSITORY(
            "--worktree-dir lies inside the repository's git directory or one of its worktrees"
        )
    if any(os.path.abspath(w) in (os.fspath(absolute), os.fspath(path)) for w in repo.worktrees):
        raise WORKTREE_DIR_REGISTERED(
            "--worktree-dir is still registered as a (missing) worktree of this repository"
        )
    return path


def _check_branch(repo: Repository, name: str) -> None:
    valid = (
        not name.startswith("-")
        and name != "HEAD"
        and try_git(repo.common_dir, ["check-ref-format", f"refs/heads/{name}"])[0] == 0
    )
    if not valid:
        raise BRANCH_INVALID("--branch is not a valid branch name")
    parts = name.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts))]
    patterns = [f"refs/heads/{name}", *(f"refs/heads/{p}" for p in prefixes)]
    out = run_git(
        repo.common_dir, ["for-each-ref", "--format=%(refname)", *patterns], what="git for-each-ref"
    )
    taken = {f"refs/heads/{p}" for p in prefixes}
    for ref in out.decode("utf-8", "surrogateescape").splitlines():
        if ref == f"refs/heads/{name}" or ref.startswith(f"refs/heads/{name}/") or ref in taken:
            raise BRANCH_EXISTS("--branch already exists, or a branch above or below its name does")


def plan_worktree(spec: WorktreeSpec, run_id: str | None = None) -> WorktreePlan:
    """Decide the creation without changing anything (see the module docstring).

    Raises:
        RepositoryRefused: see :func:`~factory.gitio.repository.locate_repository` and
            :func:`~factory.gitio.repository.resolve_base`.
        CreateRefused: ``worktree-dir-exists``, ``worktree-dir-folder-missing``,
            ``worktree-dir-not-writable``, ``worktree-dir-inside-repository``,
            ``worktree-dir-registered``, ``worktree-branch-invalid``, ``worktree-branch-exists``.
        UnsafeTree: the base tree holds a path git refuses to check out.
    """
    run_id = run_id or new_run_id()
    if not re.fullmatch(r"[0-9a-f]{6,64}", run_id):
        raise ValueError("run ids are lower-case hex")
    repo = locate_repository(spec.repo)
    commit, tree = resolve_base(repo, spec.base)
    path = _check_path(repo, spec.path if spec.path is not None else _default_path(repo, run_id))
    branch = f"{BRANCH_PREFIX}{run_id}" if spec.branch is None else (spec.branch or None)
    if branch is not None:
        _check_branch(repo, branch)
    entries = tuple(list_tree(repo.common_dir, commit))
    return WorktreePlan(repo, commit, tree, path, branch, run_id, entries)


def create_worktree(plan: WorktreePlan) -> Worktree:
    """Create the planned worktree and return it (see the module docstring).

    Raises:
        CreateFailed: the folder was taken meanwhile, git failed, or the new worktree does
            not hold the planned HEAD (exit 4).
        CheckoutFailed: writing the files or the index failed (exit 4).
    """
    mtime_ns = (time.time_ns() // 1_000_000_000 - 1) * 1_000_000_000
    try:
        os.mkdir(plan.path, 0o777)
    except FileExistsError as exc:
        raise WORKTREE_DIR_TAKEN(
            "the worktree folder was created by someone else meanwhile"
        ) from exc
    how = ["-b", plan.branch] if plan.branch is not None else ["--detach"]
    args = [*NO_HOOKS, "worktree", "add", "--no-checkout", *how, "--", os.fspath(plan.path)]
    try:
        run_git(plan.repository.common_dir, [*args, plan.base_commit], what="git worktree add")
    except GitFailure as exc:
        raise WORKTREE_CREATE_FAILED(f"git worktree add did not register it: {exc.fact}") from exc
    wt, index = _registered_as_planned(plan)
    files = write_tree_files(wt.root, plan.repository.common_dir, list(plan.entries), mtime_ns)
    write_index(index, files, plan.repository.object_format, mtime_ns)
    return wt


def _registered_as_planned(plan: WorktreePlan) -> tuple[Worktree, Path]:
    """The new worktree and its index path, after checking (one ``rev-parse``) that git
    registered it at the planned folder, linked, with HEAD at the base on the branch."""
    out = run_git(
        plan.path,
        [
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
            "--git-path",
            "index",
            "HEAD",
            "--symbolic-full-name",
            "HEAD",
        ],
        what="git rev-parse",
    )
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 6:
        raise WORKTREE_CREATE_MISMATCH("git did not describe the new worktree")
    root, git_dir, common = (Path(os.path.realpath(p)) for p in lines[:3])
    ref = f"refs/heads/{plan.branch}" if plan.branch is not None else "HEAD"
    if (
        root != plan.path
        or git_dir == common
        or common != plan.repository.common_dir
        or (lines[4], lines[5]) != (plan.base_commit, ref)
    ):
        raise WORKTREE_CREATE_MISMATCH("the new worktree is not the planned one (base, branch)")
    return Worktree(root=root, git_dir=git_dir, common_dir=common), Path(lines[3])

"""``factory runs prune``: remove the worktrees and branches of runs that are done with
(issue 22, SPEC M-1).

Only runs :func:`factory.runs.overview.prune_decision` allows — recorded by factory, the
receipt verifying, the change rejected or kept elsewhere (applied in another checkout, or
committed on another branch) — and each only under the checks of ``factory worktree
remove`` (:func:`factory.agent.worktree_remove.remove_created_worktree`: the worktree is
clean, holds exactly the candidate, or commits it; anything else is left, with the
refusal's code). The run's branch then goes only when nothing would be lost with it: it
still points at the base, or its tip is reachable from another ref, or its tip's tree is
the candidate's and the change is kept elsewhere — and no worktree has it checked out.
``update-ref -d`` with the old value (a branch that moved meanwhile stays) and hooks off.
An approved change that is nowhere else is never removed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from factory.errors import FactoryError
from factory.gitio.run import run_git, try_git
from factory.models import StrictModel
from factory.runs.overview import RunView, overview

PRUNE_SCHEMA: Final = "factory.runs-prune/1"
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


class Pruned(StrictModel):
    """One run ``factory runs prune`` looked at: what it removed and what it kept, why."""

    run_id: str
    worktree: str | None
    worktree_to_remove: bool
    worktree_removed: bool
    branch: str | None
    branch_to_remove: bool
    branch_removed: bool
    why: str
    kept: str | None


class PruneReport(StrictModel):
    """``factory.runs-prune/1``. ``*_to_remove``: prune judged the worktree or branch
    removable (with ``dry_run``, what it would remove); ``*_removed``: it was removed, so
    always false in a dry run, which removes nothing (issue 28)."""

    schema_id: Literal["factory.runs-prune/1"] = Field(default=PRUNE_SCHEMA, alias="schema")
    repository: str
    dry_run: bool
    runs: list[Pruned]


def _checked_out(common: Path, branch: str, own: str | None) -> bool:
    """Whether a worktree other than the run's own ``own`` has ``branch`` checked out."""
    from factory.runs.overview import worktrees_of

    mine = os.path.realpath(own) if own else None
    return any(b == f"refs/heads/{branch}" and f != mine for f, b in worktrees_of(common).items())


def _reachable_elsewhere(common: Path, branch: str, tip: str) -> bool:
    out = run_git(
        common,
        ["for-each-ref", "--format=%(refname)", "--contains", tip, "refs/heads/", "refs/remotes/"],
        what="git for-each-ref",
    )
    return any(ref and ref != f"refs/heads/{branch}" for ref in out.decode().split("\n"))


def branch_verdict(common: Path, view: RunView) -> str | None:
    """Why the run's branch must stay (``None``: it may go)."""
    branch, tip = view.branch, view.branch_tip
    if branch is None or tip is None:
        return "no branch"
    if _checked_out(common, branch, view.worktree):
        return "another worktree has the branch checked out"
    if tip == view.base_commit or _reachable_elsewhere(common, branch, tip):
        return None
    code, out = try_git(common, ["rev-parse", "--verify", "-q", f"{tip}^{{tree}}"])
    receipt_tree = _candidate_tree(view)
    if view.kept_elsewhere and code == 0 and out.decode().strip() == receipt_tree:
        return None
    return "the branch holds commits found nowhere else"


def _candidate_tree(view: RunView) -> str | None:
    from factory.agent.verify import load_receipt

    if view.receipt is None:
        return None
    try:
        receipt, _ = load_receipt(Path(view.receipt))
    except FactoryError:
        return None
    cand = receipt.final_candidate()
    return cand.body.candidate_tree if cand is not None else None


def _remove_worktree(view: RunView, dry_run: bool) -> tuple[bool, str | None]:
    """(removed, why it was kept); a dry run removes nothing and keeps nothing."""
    if not view.worktree_exists or dry_run:
        return False, None
    from factory.agent.worktree_remove import remove_created_worktree

    assert view.receipt is not None
    try:
        remove_created_worktree(Path(view.receipt))
    except FactoryError as exc:
        return False, f"{exc.code}: {exc.fact}"
    return True, None


def _prune_one(common: Path, view: RunView, dry_run: bool) -> Pruned:
    assert view.run_id is not None
    removed, kept = _remove_worktree(view, dry_run)
    branch_to_remove = branch_removed = False
    if kept is None and view.branch is not None and view.branch_tip is not None:
        held = branch_verdict(common, view)
        branch_to_remove = held is None
        if held is not None:
            kept = f"branch kept: {held}"
        elif not dry_run:
            args = [*NO_HOOKS, "update-ref", "-m", "factory runs prune", "-d"]
            ref = f"refs/heads/{view.branch}"
            branch_removed = try_git(common, [*args, ref, view.branch_tip])[0] == 0
            kept = None if branch_removed else "the branch moved meanwhile"
    return Pruned(
        run_id=view.run_id,
        worktree=view.worktree,
        worktree_to_remove=view.worktree_exists,
        worktree_removed=removed,
        branch=view.branch,
        branch_to_remove=branch_to_remove,
        branch_removed=branch_removed,
        why=view.why,
        kept=kept,
    )


def prune(common: Path, *, dry_run: bool = False) -> PruneReport:
    """Prune the runs of the repository with common dir ``common`` (module docstring)."""
    views = [v for v in overview(common).runs if v.prune]
    return PruneReport(
        repository=os.fspath(common),
        dry_run=dry_run,
        runs=[_prune_one(common, v, dry_run) for v in views],
    )

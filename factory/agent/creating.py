"""The creating form of the agent run: ``factory agent --repo R`` (issue 16).

:func:`prepare` makes every decision that can refuse (exit 2) before anything exists: the
request-level admission checks (task, timeout, receipt and evidence paths — outside the
repository's git directory and outside the worktree-to-be), no lock file git left in the
common dir the new worktree would share, then the creation plan
(:func:`factory.gitio.create.plan_worktree`: repository, base pinned to a full commit id,
folder, branch, base tree checked). It returns a :class:`Prelude` that
:func:`factory.agent.run.run_agent` executes *after* reserving the receipt: the receipt
names the worktree before it exists, the worktree is created, and then the ordinary
admission runs on it (linked, clean, no hidden index entries, under the worktree hold),
so every guarantee of the caller-supplied form holds. Whatever happens after the
reservation, the worktree stays and the terminal receipt names it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from factory.agent.admission import (
    EVIDENCE_INSIDE_WORKTREE,
    RECEIPT_INSIDE_WORKTREE,
    Admitted,
    AgentRequest,
    check_common_locks,
    check_outputs,
    check_task_and_timeout,
    output_paths,
)
from factory.agent.receipt import WorktreeCreation
from factory.errors import FactoryError
from factory.fsio import nearest_existing
from factory.gitio.create import WorktreePlan, WorktreeSpec, create_worktree, plan_worktree
from factory.gitio.worktree import Worktree


@dataclass(frozen=True, slots=True)
class Prelude:
    """What the run does between reserving its receipt and admitting its worktree.

    ``planned`` is the admission as decided before creation (its worktree's ``git_dir`` is
    the expected one; the real admission replaces it); ``record`` goes into every receipt;
    ``effect`` creates the worktree (run once, in a worker thread).
    """

    planned: Admitted
    record: WorktreeCreation
    effect: Callable[[], Worktree]
    ended: Callable[[], None] | None = None
    """Called once the terminal receipt is written: marks the run's registry record ended."""


def _resolved(path: Path) -> Path:
    existing, tail = nearest_existing(path)
    return existing.joinpath(*tail)


def inside_new_folder(path: Path, folder: Path) -> bool:
    """Whether ``path`` would lie inside ``folder``, a folder that does not exist yet.

    Nothing below a missing folder exists, so both resolve through their nearest existing
    ancestors (symlinks followed); a ``..`` that cannot be resolved counts as inside.
    """
    p, f = _resolved(path), _resolved(folder)
    return ".." in p.parts or p == f or f in p.parents


def _check_outputs(request: AgentRequest, plan: WorktreePlan) -> tuple[Path, Path]:
    receipt, evidence = output_paths(request)
    for path, code, flag in (
        (receipt, RECEIPT_INSIDE_WORKTREE, "--out"),
        (evidence, EVIDENCE_INSIDE_WORKTREE, "--evidence"),
    ):
        if inside_new_folder(path, plan.path):
            raise code(f"{flag} lies inside the worktree to be created")
    check_outputs(receipt, evidence, (plan.repository.common_dir,))
    return receipt, evidence


def record_of(plan: WorktreePlan) -> WorktreeCreation:
    """The receipt's record of a planned creation."""
    return WorktreeCreation(
        repository=os.fspath(plan.repository.common_dir),
        base_commit=plan.base_commit,
        branch=plan.branch,
        path=os.fspath(plan.path),
    )


def pinned(spec: WorktreeSpec, run_id: str | None = None) -> WorktreeSpec:
    """``spec`` with everything decided once: the base as its full commit id, the physical
    folder, the branch (``""`` for a detached HEAD). Planning it again later names the same
    worktree, or refuses if it can no longer be created. Reads only.

    Raises:
        RepositoryRefused / CreateRefused / UnsafeTree: as :func:`prepare`.
    """
    plan = plan_worktree(spec, run_id)
    return WorktreeSpec(
        repo=spec.repo, base=plan.base_commit, path=plan.path, branch=plan.branch or ""
    )


def prepare(spec: WorktreeSpec, draft: AgentRequest, *, run_id: str | None = None) -> Prelude:
    """Decide everything that can refuse; create nothing (see the module docstring).

    ``draft`` is the run as asked for; its ``worktree`` is replaced by the planned folder.

    Raises:
        AdmissionRefused: the request-level codes of :func:`factory.agent.admission.admit`,
            and a lock file in the common dir (``config-locked``, ``ref-locked``,
            ``git-locked``, …: :func:`~factory.agent.admission.check_common_locks`).
        RepositoryRefused / CreateRefused / UnsafeTree: see
            :func:`factory.gitio.create.plan_worktree`.
    """
    check_task_and_timeout(draft)
    plan = plan_worktree(spec, run_id)
    request = replace(draft, worktree=plan.path)
    receipt, evidence = _check_outputs(request, plan)
    common = plan.repository.common_dir
    check_common_locks(common, plan.path)
    expected = Worktree(
        root=plan.path, git_dir=common / "worktrees" / plan.path.name, common_dir=common
    )
    planned = Admitted(request, expected, receipt, evidence, plan.base_commit, plan.base_tree)
    effect = partial(create_registered, plan, receipt)
    ended = partial(mark_ended, common, plan.run_id)
    return Prelude(planned=planned, record=record_of(plan), effect=effect, ended=ended)


def mark_ended(common: Path, run_id: str) -> None:
    """Record in the registry that the run ``run_id`` has ended (its terminal receipt is
    written): from then on its branch and registration are its own, not a mutation of
    another run watching the repository, whatever becomes of this process. Nothing when the
    run never got as far as its record; a registry that cannot be written is left as it
    is (the record then vouches only while this process lives)."""
    from factory.runs.registry import read_record, runs_dir, update_run

    record = read_record(runs_dir(common) / f"{run_id}.json")
    if record is None or record.ended:
        return
    with contextlib.suppress(OSError):
        update_run(common, record.model_copy(update={"ended": True}))


def create_registered(plan: WorktreePlan, receipt: Path) -> Worktree:
    """Record the run in the repository's run registry, then create its worktree, under
    the repository's creation lock (:mod:`factory.runs.registry`): a run watching the same
    repository can then tell this run's new branch and registration from a mutation."""
    from factory.runs.registry import RunRecord, creation_lock, own_process, reserve_run

    common = plan.repository.common_dir
    record = RunRecord(
        run_id=plan.run_id,
        worktree=os.fspath(plan.path),
        branch=plan.branch,
        base_commit=plan.base_commit,
        receipt=os.fspath(receipt),
        created_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        process=own_process(),
    )
    with creation_lock(common):
        reserve_run(common, record)
        return create_worktree(plan)


UNCOMMITTED_NOTE = (
    "factory agent: the checkout of --repo has uncommitted changes; the run starts from the "
    "base commit {base} and they are not part of it"
)


def uncommitted_note(repo: Path, base_commit: str) -> str | None:
    """One stderr line when the checkout ``--repo`` lies in has uncommitted changes (staged,
    unstaged or untracked): the run starts from the base commit without them. ``None`` for a
    clean checkout, a bare repository, or when git cannot say (this is a note, never a
    refusal). Reads only; no repository program runs (:func:`status_bytes`)."""
    from factory.gitio.gitdata import status_bytes
    from factory.gitio.run import try_git

    code, out = try_git(repo, ["rev-parse", "--path-format=absolute", "--show-toplevel"])
    top = out.decode("utf-8", "surrogateescape").strip()
    if code != 0 or not top:
        return None
    try:
        changed = bool(status_bytes(Path(top)))
    except FactoryError:
        return None
    return UNCOMMITTED_NOTE.format(base=base_commit[:12]) if changed else None

"""The agent run (SPEC A-1…A-8): worker → candidate → isolated review → one repair → fresh
review, with evidence and a receipt on every return path.

This module is the script over the run's effects; every judgement (postconditions, the
verdict table, the remaining-invocations table, the terminal status and exit code) is a
pure function of :mod:`factory.agent.phases`, whose docstring holds the phase table.

Providers, route, observer and clocks are injected (:class:`~factory.agent.deps.AgentDeps`).
Local git and filesystem work runs in worker threads so observers' timers keep ticking.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import trio

from factory.agent import phases
from factory.agent.admission import (
    Admitted,
    AgentRequest,
    admit,
    check_task_and_timeout,
    hold_worktree,
)
from factory.agent.binding import Bound, bind_tree, changed_paths
from factory.agent.control import bind_control, editor_ignores
from factory.agent.creating import Prelude
from factory.agent.deps import AgentDeps, RouteReport, RunOutcome, utc_now
from factory.agent.entry import record_entry
from factory.agent.faults import failure_code, interrupted, typed_error
from factory.agent.observer import safely
from factory.agent.prompts import repair_prompt, review_prompt, worker_prompt
from factory.agent.receipt import Binding, PhaseName, VerdictName, receipt_bytes
from factory.agent.record import Candidate, OpenPhase
from factory.agent.run_state import RunState, in_thread
from factory.errors import ExitCode, ProviderFailure
from factory.fsio import reserve
from factory.gitio.snapshot import UnsupportedChangedPath
from factory.gitio.worktree import locate


class _Run(RunState):
    """The cycle over one admitted run: the editors, the reviews, the one repair."""

    async def run_editor(self, role: phases.Editor, prompt: str) -> Candidate:
        """Worker or repair: run, store evidence, judge HEAD/index and the candidate."""
        ph = self.open_phase(role, role, self.deps.agent.name)
        try:
            try:
                result = await self.deps.agent.run_agent(
                    role=role,
                    worktree=self.wt.root,
                    prompt=prompt,
                    timeout_ms=self.a.request.timeout_ms,
                    route=self.deps.route,
                    spool=self.spool(ph),
                )
            except BaseException as exc:
                self.keep_partial(ph, None if interrupted(exc) else typed_error(exc))
                raise
            self.store_outputs(ph, result)
            moved = await self.git_moved(editor_ignores)
            unchanged = await self.entry_state_unchanged()
            if moved or not unchanged:
                self.store_mutation(ph, moved or [b"git-dir/index"])
            clean = unchanged and not moved
            derived, identity = await self.derive() if clean else (None, None)
            initial = self.rec.initial
            verdict = phases.judge_editor(
                role,
                git_changed=bool(moved),
                entry_unchanged=unchanged,
                changed_files=len(derived.files) if derived else 0,
                identity=identity,
                initial_identity=initial.identity if initial else None,
            )
            ph.postcondition = verdict.postcondition
            if verdict.error is not None:
                raise verdict.error
            assert derived is not None
            cand = self.bind_candidate("initial" if role == "worker" else "repaired", derived)
            ph.reviewed_identity = cand.identity
            ph.outcome = "ok"
            return cand
        except BaseException as exc:
            ph.outcome = failure_code(exc)
            raise
        finally:
            self.close_phase(ph)

    async def reviewer_ran(
        self, ph: OpenPhase, cand: Candidate, scratch: Path
    ) -> ProviderFailure | None:
        """Run the reviewer; a provider failure is returned, to be judged after the
        mutation checks; anything else (interruption, a bug) propagates."""
        prompt = review_prompt(self.a.request.task, cand.identity, cand.record.body, cand.patch)
        try:
            result = await self.deps.reviewer.run_reviewer(
                worktree=self.wt.root,
                prompt=prompt,
                timeout_ms=self.a.request.timeout_ms,
                route=self.deps.route,
                scratch=scratch,
                spool=self.spool(ph),
            )
        except BaseException as exc:
            typed = None if interrupted(exc) else typed_error(exc)
            self.keep_partial(ph, typed)
            if not isinstance(typed, ProviderFailure):
                raise
            return typed
        self.store_outputs(ph, result)
        return None

    async def mutated(self, ph: OpenPhase, tree0: Bound, cand: Candidate) -> bool:
        """Did the worktree tree, the git directories or the candidate identity change?
        Any change is stored as evidence (the identity alone: an empty list).

        The worktree's index is judged by its entries (path, mode, object, stage, flags),
        as for the editors, not by its bytes: a reviewer's plain ``git diff`` rewrites the
        index's stat cache after the worker touched a tracked file without changing it,
        and that read is not a mutation (issue 24 §1)."""
        moved = await self.git_moved(editor_ignores)
        if await self.index_entries() != self.entry_index:
            moved.append(b"git-dir/index")
        tree1 = await in_thread(partial(bind_tree, self.wt.root, tree0))
        self.last_tree = tree1
        moved += [b"worktree/" + p for p in changed_paths(tree0, tree1)]
        if not moved:
            try:
                _, again = await self.derive(details=False)
            except UnsupportedChangedPath as exc:
                # The reviewer made a change the candidate cannot hold (inside a submodule):
                # its mutation, named by where it is, never the candidate's fault.
                moved = [_problem_label(exc)]
            else:
                if again == cand.identity:
                    return False
        self.store_mutation(ph, moved)
        return True

    async def run_review(self, phase: PhaseName, cand: Candidate) -> VerdictName:
        """A fresh read-only reviewer over exactly ``cand`` (SPEC A-5)."""
        ph = self.open_phase(phase, "reviewer", self.deps.reviewer.name)
        ph.reviewed_identity = cand.identity
        scratch = self.scratch_dir()
        try:
            # The last review's after-binding seeds the stat cache (old, unchanged files only).
            tree0: Bound = await in_thread(partial(bind_tree, self.wt.root, self.last_tree))
            # The git directories as the editor's check left them: a change since is the
            # review's (nothing else runs in between).
            ctl0 = self.git_state
            if ctl0 is None:
                ctl0 = self.git_state = await in_thread(partial(bind_control, self.wt))
            ph.binding = Binding(
                worktree_tree=tree0.digest, git_control=ctl0.digest, entries=len(tree0.entries)
            )
            failure = await self.reviewer_ran(ph, cand, scratch)
            judged = phases.judge_review(
                mutated=await self.mutated(ph, tree0, cand),
                failure=failure,
                verdict=ph.result.verdict if ph.result else None,
            )
            ph.postcondition = judged.postcondition
            if judged.error is not None:
                raise judged.error
            assert judged.verdict is not None and ph.result is not None and ph.result.verdict
            ph.verdict = ph.outcome = judged.verdict
            if phase == "initial_review":
                summary = ph.result.verdict.summary
                self.first_verdict = {"verdict": judged.verdict, "summary": summary}
            return judged.verdict
        except BaseException as exc:
            ph.outcome = failure_code(exc)
            raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            self.close_phase(ph)

    # -- the cycle -------------------------------------------------------------------------
    async def review(self, phase: PhaseName, cand: Candidate) -> phases.Next:
        running, judged = phases.REVIEW_STAGES[phase]
        self.stage(running)
        verdict = self.rec.verdict = await self.run_review(phase, cand)
        self.stage(judged, verdict=verdict)
        return phases.AFTER_REVIEW[(phase, verdict)]

    async def cycle(self) -> RunOutcome:
        await in_thread(self.store.claim)
        entry = await in_thread(
            partial(record_entry, self.wt, self.a.base_commit, self.a.base_tree, self.store)
        )
        base = entry.record
        if self.rec.creation is not None:
            base = base.model_copy(update={"isolation": "factory-created-linked-git-worktree"})
        self.rec.base, self.baseline = base, entry.baseline
        self.entry_ref = entry.record.branch
        await self.bind_entry_index()
        task = self.a.request.task

        self.stage("worker_running")
        initial = self.rec.initial = await self.run_editor("worker", worker_prompt(task))
        self.stage("worker_completed")
        if await self.review("initial_review", initial) == "completed":
            return self.finish(phases.ended("completed"))

        self.stage("repair_running")
        prompt = repair_prompt(
            task, initial.identity, initial.record.body, initial.patch, self.reviewer_output()
        )
        repaired = self.rec.repaired = await self.run_editor("repair", prompt)
        self.stage("repair_completed")
        after = await self.review("final_review", repaired)
        return self.finish(phases.ended("completed" if after == "completed" else "rejected"))


async def run_agent(
    request: AgentRequest,
    deps: AgentDeps,
    *,
    prelude: Prelude | None = None,
    admitted: Admitted | None = None,
    held: bool = False,
) -> RunOutcome:
    """Admit, reserve, run the cycle and write the terminal receipt (SPEC A-1…A-8).

    With ``prelude`` (``factory agent --repo``, :mod:`factory.agent.creating`) the receipt
    is reserved first, then the worktree is created, then admitted as usual; a refusal of
    that admission is then a failure (4) whose receipt names the worktree. ``admitted``: the
    caller's admission of ``request``; ``held``: the caller made it while holding the
    worktree's lock (:func:`factory.agent.admission.hold_worktree`), which it keeps for the
    whole run (``factory agent`` locks and admits before importing any provider).

    One admission per run, made under the worktree's lock, so no run can leave changes
    between the check and the lock (time-of-check/time-of-use): without ``admitted`` the
    lock is taken first; an admission made without the lock is made again under it. The
    creating form takes the lock first too (the worktree it just created is located, not
    admitted) and admits once under it.

    Returns:
        the outcome: exit 0 completed, 3 rejected, 4 typed failure (receipt ``failed``).

    Raises:
        AdmissionRefused / WorktreeRefused / OutputExists: refused before any effect (2).
        trio.Cancelled, KeyboardInterrupt: after writing an ``interrupted`` receipt (130).
        Exception: an internal error, after writing a ``failed`` receipt with exit 1.
    """
    observer = deps.observer
    safely(partial(observer.stage, "validating", remaining_invocations=phases.MAX_INVOCATIONS))
    if prelude is not None:
        return await _created_run(prelude, deps)
    if admitted is not None and held:
        return await _admitted_run(admitted, deps)  # admitted under the lock the caller holds
    if admitted is None:
        check_task_and_timeout(request)  # what needs no worktree is refused first, as admit does
        wt = await trio.to_thread.run_sync(locate, request.worktree)
    else:
        wt = admitted.worktree
    with hold_worktree(wt):
        # Admitted (again, for a caller's admission made without the lock) under the lock: a
        # run that ended between a check and the lock may have left changes (TOCTOU).
        return await _admitted_run(await trio.to_thread.run_sync(admit, request), deps)


async def _admitted_run(admitted: Admitted, deps: AgentDeps) -> RunOutcome:
    run = _Run(admitted, deps)
    reserve(admitted.receipt, receipt_bytes(run.running_receipt()))
    return await _closing(run, run.cycle)


async def _created_run(prelude: Prelude, deps: AgentDeps) -> RunOutcome:
    run = _Run(prelude.planned, deps, prelude.record)
    reserve(prelude.planned.receipt, receipt_bytes(run.running_receipt()))
    admit_created = partial(admit, prelude.planned.request, receipt_reserved=True)

    async def create_admit_cycle() -> RunOutcome:
        await trio.to_thread.run_sync(prelude.effect)
        # The worktree this run just created: locked first, then admitted once under the lock.
        created = await trio.to_thread.run_sync(locate, prelude.planned.request.worktree)
        with hold_worktree(created):
            run.adopt(await trio.to_thread.run_sync(admit_created))
            return await run.cycle()

    try:
        return await _closing(run, create_admit_cycle)
    finally:
        if prelude.ended is not None:  # the terminal receipt is written: the run has ended
            prelude.ended()


async def _closing(run: _Run, body: Callable[[], Awaitable[RunOutcome]]) -> RunOutcome:
    """Run ``body`` after the reservation; every way out leaves a terminal receipt."""
    try:
        return await body()
    except BaseException as exc:
        end = phases.terminal_for(exc)
        outcome = run.finish(end)
        if end.exit_code == ExitCode.FAILURE:
            return outcome  # a typed failure is an outcome; interruptions and bugs propagate
        raise


__all__ = ["AgentDeps", "RouteReport", "RunOutcome", "run_agent", "utc_now"]


def _problem_label(exc: UnsupportedChangedPath) -> bytes:
    """The mutation label of a change the candidate cannot hold: ``submodule/<path>`` for
    a submodule changed inside (its index or files), ``worktree/<path>`` otherwise."""
    problem = exc.problem
    if problem is None:
        return b"worktree/"
    kind = b"submodule/" if problem.reason.startswith("submodule") else b"worktree/"
    return kind + problem.path

"""The agent run (SPEC A-1…A-8): worker → candidate → isolated review → one repair → fresh
review, with evidence and a receipt on every return path.

This module is the script over the run's effects; every judgement (postconditions, the
verdict table, the remaining-invocations table, the terminal status and exit code) is a
pure function of :mod:`factory.agent.phases`, whose docstring holds the phase table.

Providers, route, observer and clocks are injected (:class:`~factory.agent.deps.AgentDeps`).
Local git and filesystem work runs in worker threads so observers' timers keep ticking.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import trio

from factory.agent import evidence as ev
from factory.agent import phases
from factory.agent.admission import Admitted, AgentRequest, admit, hold_worktree
from factory.agent.binding import Bound, bind_tree, changed_paths
from factory.agent.control import bind_control, editor_ignores
from factory.agent.creating import Prelude
from factory.agent.deps import AgentDeps, RouteReport, RunOutcome, utc_now
from factory.agent.entry import record_entry
from factory.agent.faults import (
    ROUTE_EVIDENCE_FAILED,
    SCRATCH_UNAVAILABLE,
    failure_code,
    interrupted,
    typed_error,
)
from factory.agent.identity import candidate_body
from factory.agent.observer import Stage, safely
from factory.agent.prompts import repair_prompt, review_prompt, worker_prompt
from factory.agent.receipt import (
    AgentReceipt,
    Binding,
    CandidateRecord,
    FactoryProcess,
    PathCollision,
    PhaseName,
    RoleName,
    VerdictName,
    WorktreeCreation,
    receipt_bytes,
)
from factory.agent.record import Candidate, OpenPhase, RunRecord
from factory.errors import Code, ExitCode, FactoryError, ProviderFailure
from factory.fsio import atomic_replace, physically_inside, reserve
from factory.gitio.candidate import DerivedCandidate, derive
from factory.gitio.create import WORKTREE_CREATE_MISMATCH
from factory.gitio.index_entries import index_entries_digest
from factory.gitio.rawfs import StatCache
from factory.gitio.snapshot import Baseline
from factory.gitio.worktree import head_commit, head_ref
from factory.proc import Captured
from factory.proc.procfs import boot_id, read_stat
from factory.provider_api import ProviderResult, Spool, partial_of

T = TypeVar("T")


_MEDIA = {"stdout": ev.JSONL, "stderr": ev.TEXT, "verdict": ev.JSON}
_EVIDENCE_PREFIX = {
    "worker": "worker",
    "initial_review": "initial-review",
    "repair": "repair",
    "final_review": "final-review",
}


async def _io(fn: Callable[[], T]) -> T:
    return await trio.to_thread.run_sync(fn)


class _Run:
    """One admitted run: the effects, the observer calls and the receipt writer."""

    def __init__(
        self, admitted: Admitted, deps: AgentDeps, creation: WorktreeCreation | None = None
    ) -> None:
        self.a = admitted
        self.wt = admitted.worktree
        self.deps = deps
        self.store = ev.EvidenceStore(admitted.evidence, admitted.receipt.parent)
        # creation: set when factory created the worktree (--repo), in every receipt
        self.rec = RunRecord(
            admitted, deps.route, deps.utc_now(), trace_id=deps.trace_id, creation=creation
        )
        self.rec.factory_process = _this_process()
        self.remaining = phases.MAX_INVOCATIONS
        self.last_tree: Bound | None = None
        self.baseline: Baseline | None = None
        self.git_state: Bound | None = None  # the git directories after the last phase
        self.derive_cache: StatCache | None = None
        self.first_verdict: dict[str, str] | None = None
        self.entry_ref: str | None = None
        self.entry_index: str | None = None  # the index entries' digest at entry
        self.t0 = trio.current_time()
        self.route_problem: tuple[Code[FactoryError], str] | None = None
        self.route_reported = False

    # -- observation and the terminal receipt ----------------------------------------------
    def stage(self, stage: Stage, *, verdict: VerdictName | None = None) -> None:
        # The bound never increases, whatever the table says.
        self.remaining = min(self.remaining, phases.remaining(stage, verdict))
        observe = self.deps.observer.stage
        safely(partial(observe, stage, remaining_invocations=self.remaining, verdict=verdict))

    def _ms_since(self, t0: float) -> int:
        return max(0, round((trio.current_time() - t0) * 1000))

    def running_receipt(self) -> AgentReceipt:
        return self.rec.receipt("running", None, None, ended_at=None, duration_ms=None)

    def adopt(self, admitted: Admitted) -> None:
        """Take over the admission of the worktree created after the reservation; its HEAD
        must be the base pinned before creation."""
        if admitted.base_commit != self.a.base_commit or admitted.receipt != self.a.receipt:
            raise WORKTREE_CREATE_MISMATCH("the created worktree's HEAD is not the pinned base")
        self.a, self.wt, self.rec.admitted = admitted, admitted.worktree, admitted

    def report_route(self) -> None:
        """Store the route's own record once (see :class:`RouteReport`); never raises."""
        if self.route_reported or self.deps.route_report is None:
            return
        self.route_reported = True
        try:
            report = self.deps.route_report()
            if report is not None:
                self.route_problem = report.problem
                put = self.store.put(report.role, report.data, report.media_type)
                self.rec.route_evidence = put
        except Exception:  # the terminal receipt must still be written
            self.route_problem = self.route_problem or (
                ROUTE_EVIDENCE_FAILED,
                "the route's own record could not be stored as evidence",
            )

    def finish(self, end: phases.Terminal) -> RunOutcome:
        self.report_route()
        end = phases.with_route_problem(end, self.route_problem)
        receipt = self.rec.receipt(
            end.status,
            end.exit_code,
            end.error,
            ended_at=self.deps.utc_now(),
            duration_ms=self._ms_since(self.t0),
        )
        data = receipt_bytes(receipt)
        atomic_replace(self.a.receipt, data)
        observe = self.deps.observer
        safely(
            partial(observe.stage, "terminal_outcome", remaining_invocations=0, outcome=end.status)
        )
        error_code = end.error.code if end.error is not None else None
        close = partial(
            observe.close, outcome=end.status, exit_code=end.exit_code, error_code=error_code
        )
        safely(close)
        return RunOutcome(receipt, data, end.exit_code)

    # -- phases ----------------------------------------------------------------------------
    def open_phase(self, phase: PhaseName, role: RoleName, profile: str) -> OpenPhase:
        safely(partial(self.deps.observer.phase_started, phase))
        return OpenPhase(phase, role, profile, self.deps.utc_now(), trio.current_time())

    def close_phase(self, ph: OpenPhase) -> None:
        duration = self._ms_since(ph.t0)
        self.rec.close(ph, ended_at=self.deps.utc_now(), duration_ms=duration)
        observe = self.deps.observer.phase_ended
        safely(partial(observe, ph.phase, outcome=ph.outcome, duration_ms=duration))

    def spool(self, ph: OpenPhase) -> Spool:
        """Where the phase's CLI streams its stdout/stderr as they arrive (evidence folder)."""
        return Spool(self.a.evidence, _EVIDENCE_PREFIX[ph.phase])

    def store_outputs(self, ph: OpenPhase, result: ProviderResult) -> None:
        ph.result = result
        prefix = _EVIDENCE_PREFIX[ph.phase]
        named: list[tuple[str, bytes | Captured]] = [*result.streams.items()]
        named += result.outputs.items()
        for name, output in sorted(named, key=lambda item: item[0]):
            media = _MEDIA.get(name, "application/octet-stream")
            role = f"{prefix}-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            if isinstance(output, bytes):
                ph.evidence.append(self.store.put(role, output, media))
            else:
                ph.evidence.append(self.store.adopt(role, output, media))

    def keep_partial(self, ph: OpenPhase, failure: BaseException | None) -> None:
        """A failed invocation still leaves its CLI version, argv shape and captured
        streams in the phase record (SPEC A-7); storing them never hides the failure."""
        partial_result = partial_of(failure)
        if partial_result is None:
            return
        ph.result = partial_result
        with contextlib.suppress(ev.EvidenceFailure):
            self.store_outputs(ph, partial_result)

    async def entry_state_unchanged(self) -> bool:
        """HEAD (commit and the branch it names) and the index entries (mode, object id,
        stage, intent-to-add and hide bits: :mod:`factory.gitio.index_entries`; so the
        index tree too) equal their entry values."""
        base = self.rec.base
        assert base is not None
        head = await _io(partial(head_commit, self.wt))
        ref = await _io(partial(head_ref, self.wt))
        index = await _io(partial(index_entries_digest, self.wt.root))
        return (head, ref, index) == (base.commit, self.entry_ref, self.entry_index)

    async def derive(self, *, details: bool = True) -> tuple[DerivedCandidate, str]:
        base = self.rec.base
        assert base is not None
        cache = self.derive_cache
        d = await _io(
            partial(
                derive, self.wt, base.commit, base.tree, self.baseline, cache=cache, details=details
            )
        )
        self.derive_cache = d.cache
        return d, candidate_body(d).identity()

    def bind_candidate(self, label: str, d: DerivedCandidate) -> Candidate:
        """Store the status bytes and patch as evidence and bind them to the identity."""
        body = candidate_body(d)
        record = CandidateRecord(
            identity=body.identity(),
            body=body,
            status_evidence=self.store.put(f"{label}-candidate-status", d.status, ev.STATUS),
            patch_evidence=self.store.put(f"{label}-candidate-patch", d.patch, ev.PATCH),
            conversions_differ=d.conversions_differ,
            collisions=[PathCollision(kind=g.kind, paths=list(g.paths)) for g in d.collisions],
        )
        return Candidate(record, d.patch)

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

    async def git_moved(self, ignore: Callable[[bytes], bool] | None = None) -> list[bytes]:
        """Bind the git directories again; the labels changed since the last binding."""
        before = self.git_state
        after = await _io(partial(bind_control, self.wt, before))
        self.git_state = after
        return changed_paths(before, after, ignore) if before is not None else []

    def store_mutation(self, ph: OpenPhase, paths: list[bytes]) -> None:
        """The sorted changed paths as evidence ``<phase>-mutation-paths`` (each path's
        bytes + NUL; ``worktree/…``, ``git-dir/…``, ``common-dir/…``)."""
        data = b"".join(p + b"\0" for p in sorted(paths))
        role = f"{_EVIDENCE_PREFIX[ph.phase]}-mutation-paths"
        ph.evidence.append(self.store.put(role, data, ev.PATHS))

    async def mutated(self, ph: OpenPhase, tree0: Bound, cand: Candidate) -> bool:
        """Did the worktree tree, the git directories or the candidate identity change?
        Any change is stored as evidence (the identity alone: an empty list)."""
        moved = await self.git_moved()
        tree1 = await _io(partial(bind_tree, self.wt.root, tree0))
        self.last_tree = tree1
        moved += [b"worktree/" + p for p in changed_paths(tree0, tree1)]
        if not moved:
            _, again = await self.derive(details=False)
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
            tree0: Bound = await _io(partial(bind_tree, self.wt.root, self.last_tree))
            # The git directories as the editor's check left them: a change since is the
            # review's (nothing else runs in between).
            ctl0 = self.git_state
            if ctl0 is None:
                ctl0 = self.git_state = await _io(partial(bind_control, self.wt))
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

    def scratch_dir(self) -> Path:
        """A private folder for the reviewer's schema/verdict files, outside the worktree."""
        for parent in (None, os.fspath(self.a.evidence.parent)):
            path = Path(tempfile.mkdtemp(prefix="factory-review-", dir=parent))
            if not any(
                physically_inside(path, f)
                for f in (self.wt.root, self.wt.git_dir, self.wt.common_dir)
            ):
                return path
            shutil.rmtree(path, ignore_errors=True)
        raise SCRATCH_UNAVAILABLE("no private scratch folder outside the worktree")

    def reviewer_output(self) -> str:
        """The exact output of the initial reviewer, for the repair prompt (as data)."""
        first = self.rec.first_review()
        for ref in first.evidence if first else []:
            if ref.role.endswith("-verdict"):
                path = ev.resolve_evidence_path(ref, self.a.receipt)
                return ev.read_nofollow(path).decode("utf-8", "replace")
        # No verdict file was produced: the validated verdict is all the reviewer said.
        return json.dumps(self.first_verdict or {}, ensure_ascii=False)

    # -- the cycle -------------------------------------------------------------------------
    async def review(self, phase: PhaseName, cand: Candidate) -> phases.Next:
        running, judged = phases.REVIEW_STAGES[phase]
        self.stage(running)
        verdict = self.rec.verdict = await self.run_review(phase, cand)
        self.stage(judged, verdict=verdict)
        return phases.AFTER_REVIEW[(phase, verdict)]

    async def cycle(self) -> RunOutcome:
        await _io(self.store.claim)
        entry = await _io(
            partial(record_entry, self.wt, self.a.base_commit, self.a.base_tree, self.store)
        )
        base = entry.record
        if self.rec.creation is not None:
            base = base.model_copy(update={"isolation": "factory-created-linked-git-worktree"})
        self.rec.base, self.baseline = base, entry.baseline
        self.entry_ref = entry.record.branch
        self.entry_index = await _io(partial(index_entries_digest, self.wt.root))
        self.git_state = await _io(partial(bind_control, self.wt))
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


def _this_process() -> FactoryProcess | None:
    """This process's identity for the receipt (None where ``/proc`` is missing), so a
    reservation left by a killed factory reads as abandoned."""
    st = read_stat(os.getpid())
    boot = boot_id()
    if st is None or not boot:
        return None
    return FactoryProcess(pid=st.pid, start_ticks=st.starttime, boot_id=boot)


async def run_agent(
    request: AgentRequest, deps: AgentDeps, *, prelude: Prelude | None = None
) -> RunOutcome:
    """Admit, reserve, run the cycle and write the terminal receipt (SPEC A-1…A-8).

    With ``prelude`` (``factory agent --repo``, :mod:`factory.agent.creating`) the receipt
    is reserved first, then the worktree is created, then admitted as usual; a refusal of
    that admission is then a failure (4) whose receipt names the worktree.

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
    first = await trio.to_thread.run_sync(admit, request)
    with hold_worktree(first.worktree):
        # Admitted again under the lock: a run that ended meanwhile may have left changes.
        admitted = await trio.to_thread.run_sync(admit, request)
        return await _admitted_run(admitted, deps)


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
        first = await trio.to_thread.run_sync(admit_created)
        with hold_worktree(first.worktree):
            run.adopt(await trio.to_thread.run_sync(admit_created))
            return await run.cycle()

    return await _closing(run, create_admit_cycle)


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

"""The agent run (SPEC A-1…A-8): worker → candidate → isolated review → one repair → fresh
review, with evidence and a receipt on every return path.

Phase table (exit codes per F-3)::

    worker ─ HEAD/index moved ────────────────────────► failed  worker-git-mutation (4)
           ─ nothing changed ─────────────────────────► failed  no-candidate-change (4)
    initial review ─ tree/control/identity changed ───► failed  reviewer-mutation (4)
                   ─ no valid verdict ────────────────► failed  reviewer-protocol (4)
                   ─ APPROVE ─────────────────────────► completed (0)
                   ─ REQUEST_CHANGES ─► repair (exactly one)
    repair ─ HEAD/index moved ────────────────────────► failed  repair-git-mutation (4)
           ─ identity unchanged or empty ─────────────► failed  repair-no-change (4)
    final review (fresh session, repaired identity) ─ same checks as above
                 ─ APPROVE ───────────────────────────► completed (0)
                 ─ REQUEST_CHANGES ───────────────────► rejected (3) — never a 2nd repair
    any provider failure ─────────────────────────────► failed  provider-* (4)
    cancellation / Ctrl-C ────────────────────────────► interrupted (130), then re-raised

Providers, route, observer and clocks are injected (:class:`AgentDeps`). Local git and
filesystem work runs in worker threads so observers' timers keep ticking.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import trio

from factory import __version__
from factory.agent import evidence as ev
from factory.agent.admission import Admitted, AgentRequest, admit, hold_worktree
from factory.agent.binding import Bound, bind_control, bind_tree, changed_paths
from factory.agent.creating import Prelude
from factory.agent.faults import (
    NO_CANDIDATE_CHANGE,
    REPAIR_GIT_MUTATION,
    REPAIR_NO_CHANGE,
    REVIEWER_MUTATION,
    REVIEWER_PROTOCOL,
    ROUTE_EVIDENCE_FAILED,
    SCRATCH_UNAVAILABLE,
    WORKER_GIT_MUTATION,
    failure_code,
    interrupted,
    typed_error,
    without_paths,
)
from factory.agent.identity import candidate_body
from factory.agent.observer import NullObserver, Outcome, RunObserver, Stage, safely
from factory.agent.prompts import repair_prompt, review_prompt, worker_prompt
from factory.agent.receipt import (
    DECLARED_RESIDUALS,
    AgentReceipt,
    BaseRecord,
    Binding,
    CandidateBody,
    CandidateRecord,
    Candidates,
    ErrorRecord,
    EvidenceRef,
    PhaseName,
    PhaseRecord,
    RoleName,
    Timings,
    VerdictName,
    WorktreeCreation,
    receipt_bytes,
)
from factory.errors import INTERNAL, INTERRUPTED, Code, ExitCode, ProviderFailure
from factory.fsio import atomic_replace, physically_inside, reserve
from factory.gitio.candidate import DerivedCandidate, derive
from factory.gitio.create import WORKTREE_CREATE_MISMATCH
from factory.gitio.worktree import Worktree, head_commit, head_ref, index_tree
from factory.provider_api import (
    PROVIDER_PROTOCOL,
    AgentProfile,
    ProviderResult,
    ReviewerProfile,
    Route,
)

T = TypeVar("T")


def utc_now() -> str:
    """UTC wall-clock time, RFC 3339 with milliseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class RouteReport:
    """What the route itself recorded during the run, to be stored as evidence.

    Attributes:
        role: the evidence role (kebab-case), e.g. ``rehearsal-log``.
        data: the exact bytes to store (content-addressed, 0600, SPEC A-7).
        media_type: e.g. ``application/json``.
        problem: ``(code, one-line message without paths)`` when the route saw the run go
            outside its contract (e.g. ``rehearsal-scenario-unconsumed``); a run that would
            otherwise complete or be rejected then fails with this error (exit 4).
    """

    role: str
    data: bytes
    media_type: str
    problem: tuple[Code[Any], str] | None = None


@dataclass
class AgentDeps:
    """The run's effects. ``observer`` calls are always wrapped with ``safely``.

    ``route_report``, when given, is called once while the terminal receipt is written
    (the route is still open); its :class:`RouteReport` is stored as evidence and bound by
    the receipt's ``route_evidence``. The CLI wires the rehearsal log here, so this core
    never imports the rehearsal route.
    """

    agent: AgentProfile
    reviewer: ReviewerProfile
    route: Route
    observer: RunObserver = field(default_factory=NullObserver)
    utc_now: Callable[[], str] = utc_now
    route_report: Callable[[], RouteReport | None] | None = None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The terminal receipt, its exact bytes, and the exit code (0, 3 or 4)."""

    receipt: AgentReceipt
    data: bytes
    exit_code: int


@dataclass(frozen=True, slots=True)
class _Candidate:
    record: CandidateRecord
    patch: bytes

    @property
    def identity(self) -> str:
        return self.record.identity


@dataclass
class _Phase:
    phase: PhaseName
    role: RoleName
    profile: str
    started_at: str
    t0: float
    result: ProviderResult | None = None
    postcondition: str = "not-observed"
    outcome: str = "interrupted"
    verdict: VerdictName | None = None
    reviewed_identity: str | None = None
    binding: Binding | None = None
    evidence: list[EvidenceRef] = field(default_factory=list)


_MEDIA = {"stdout": ev.JSONL, "stderr": ev.TEXT, "verdict": ev.JSON}
_EVIDENCE_PREFIX = {
    "worker": "worker",
    "initial_review": "initial-review",
    "repair": "repair",
    "final_review": "final-review",
}


class _Run:
    """One admitted run: mutable phase state and the terminal-receipt writer."""

    def __init__(
        self, admitted: Admitted, deps: AgentDeps, creation: WorktreeCreation | None = None
    ) -> None:
        self.a = admitted
        self.wt: Worktree = admitted.worktree
        self.deps = deps
        self.creation = creation  # set when factory created the worktree (--repo)
        self.store = ev.EvidenceStore(admitted.evidence, admitted.receipt.parent)
        self.phases: list[PhaseRecord] = []
        self.initial: _Candidate | None = None
        self.repaired: _Candidate | None = None
        self.verdict: VerdictName | None = None
        self.base: BaseRecord | None = None
        self.remaining = 4
        self.last_tree: Bound | None = None
        self.first_verdict: dict[str, str] | None = None
        self.entry_ref: str | None = None
        self.started_at = deps.utc_now()
        self.t0 = trio.current_time()
        self.route_ref: EvidenceRef | None = None
        self.route_problem: tuple[Code[Any], str] | None = None
        self.route_reported = False

    # -- observation ---------------------------------------------------------------------
    def stage(
        self,
        stage: Stage,
        remaining: int,
        *,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        self.remaining = min(self.remaining, remaining)  # the bound never increases
        safely(
            partial(
                self.deps.observer.stage,
                stage,
                remaining_invocations=self.remaining,
                verdict=verdict,
                outcome=outcome,
            )
        )

    # -- receipts ------------------------------------------------------------------------
    def receipt(
        self, status: str, exit_code: int | None, error: ErrorRecord | None
    ) -> AgentReceipt:
        terminal = status != "running"
        return AgentReceipt.model_validate(
            {
                "status": status,
                "exit_code": exit_code,
                "execution": self.deps.route.execution,
                "route": self.deps.route.name,
                "factory_version": __version__,
                "task": self.a.request.task,
                "worktree": os.fspath(self.wt.root),
                "evidence_dir": os.fspath(self.a.evidence),
                "timeout_ms": self.a.request.timeout_ms,
                "base": self.base,
                "phases": list(self.phases),
                "candidate": Candidates(
                    initial=self.initial.record if self.initial else None,
                    repaired=self.repaired.record if self.repaired else None,
                ),
                "verdict": self.verdict,
                "error": error,
                "residuals": list(DECLARED_RESIDUALS),
                "route_evidence": self.route_ref,
                "worktree_creation": self.creation,
                "timings": Timings(
                    started_at=self.started_at,
                    ended_at=self.deps.utc_now() if terminal else None,
                    duration_ms=self._ms_since(self.t0) if terminal else None,
                ),
            }
        ).closed()

    def adopt(self, admitted: Admitted) -> None:
        """Take over the admission of the worktree created after the reservation; its HEAD
        must be the base pinned before creation."""
        if admitted.base_commit != self.a.base_commit or admitted.receipt != self.a.receipt:
            raise WORKTREE_CREATE_MISMATCH("the created worktree's HEAD is not the pinned base")
        self.a, self.wt = admitted, admitted.worktree

    def report_route(self) -> None:
        """Store the route's own record once (see :class:`RouteReport`); never raises."""
        if self.route_reported or self.deps.route_report is None:
            return
        self.route_reported = True
        try:
            report = self.deps.route_report()
            if report is not None:
                self.route_problem = report.problem
                self.route_ref = self.store.put(report.role, report.data, report.media_type)
        except Exception:  # the terminal receipt must still be written
            self.route_problem = self.route_problem or (
                ROUTE_EVIDENCE_FAILED,
                "the route's own record could not be stored as evidence",
            )

    def finish(self, status: Outcome, exit_code: int, error: ErrorRecord | None) -> RunOutcome:
        self.report_route()
        if self.route_problem is not None and status in ("completed", "rejected"):
            # A verdict reached outside the route's contract (e.g. a rehearsal whose script
            # was not followed) is not a verdict: fail, never pass silently (exit 4).
            code, fact = self.route_problem
            message = f"{fact}; {code.next_step}"
            status, exit_code = "failed", int(ExitCode.FAILURE)
            error = ErrorRecord(code=code.name, message=message)
        receipt = self.receipt(status, exit_code, error)
        data = receipt_bytes(receipt)
        atomic_replace(self.a.receipt, data)
        self.stage("terminal_outcome", 0, outcome=status)
        safely(partial(self.deps.observer.close, outcome=status, exit_code=exit_code))
        return RunOutcome(receipt, data, exit_code)

    @staticmethod
    def _ms_since(t0: float) -> int:
        return max(0, round((trio.current_time() - t0) * 1000))

    # -- phases --------------------------------------------------------------------------
    def open_phase(self, phase: PhaseName, role: RoleName, profile: str) -> _Phase:
        safely(partial(self.deps.observer.phase_started, phase))
        return _Phase(phase, role, profile, self.deps.utc_now(), trio.current_time())

    def close_phase(self, ph: _Phase) -> None:
        duration = self._ms_since(ph.t0)
        r = ph.result
        self.phases.append(
            PhaseRecord(
                phase=ph.phase,
                role=ph.role,
                profile=r.profile if r else ph.profile,
                cli_version=r.cli_version if r else None,
                requested_authority=r.requested_authority if r else "",
                argv_shape=list(r.argv_shape) if r else [],
                process_exit_code=r.exit_code if r else None,
                observed_postcondition=ph.postcondition,
                outcome=ph.outcome,
                verdict=ph.verdict,
                reviewed_identity=ph.reviewed_identity,
                binding=ph.binding,
                evidence=list(ph.evidence),
                started_at=ph.started_at,
                ended_at=self.deps.utc_now(),
                duration_ms=duration,
            )
        )
        safely(
            partial(
                self.deps.observer.phase_ended, ph.phase, outcome=ph.outcome, duration_ms=duration
            )
        )

    async def io(self, fn: Callable[[], T]) -> T:
        return await trio.to_thread.run_sync(fn)

    def store_outputs(self, ph: _Phase, result: ProviderResult) -> None:
        prefix = _EVIDENCE_PREFIX[ph.phase]
        for name in sorted(result.outputs):
            media = _MEDIA.get(name, "application/octet-stream")
            role = f"{prefix}-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            ph.evidence.append(self.store.put(role, result.outputs[name], media))

    async def entry_state_unchanged(self) -> bool:
        """HEAD (commit and the branch it names) and the index tree equal their entry values."""
        assert self.base is not None
        head = await self.io(partial(head_commit, self.wt))
        ref = await self.io(partial(head_ref, self.wt))
        index = await self.io(partial(index_tree, self.wt))
        return (head, ref, index) == (self.base.commit, self.entry_ref, self.base.index_tree)

    def bind_candidate(self, label: str, d: DerivedCandidate, body: CandidateBody) -> _Candidate:
        """Store the status bytes and patch as evidence and bind them to the identity."""
        status_ref = self.store.put(f"{label}-candidate-status", d.status, ev.STATUS)
        patch_ref = self.store.put(f"{label}-candidate-patch", d.patch, ev.PATCH)
        record = CandidateRecord(
            identity=body.identity(),
            body=body,
            status_evidence=status_ref,
            patch_evidence=patch_ref,
        )
        return _Candidate(record, d.patch)

    async def run_editor(self, phase: PhaseName, prompt: str) -> _Candidate:
        """Worker or repair: run, store evidence, check HEAD/index, derive the candidate."""
        role: RoleName = "worker" if phase == "worker" else "repair"
        ph = self.open_phase(phase, role, self.deps.agent.name)
        try:
            result = await self.deps.agent.run_agent(
                role=role,
                worktree=self.wt.root,
                prompt=prompt,
                timeout_ms=self.a.request.timeout_ms,
                route=self.deps.route,
            )
            ph.result = result
            self.store_outputs(ph, result)
            if not await self.entry_state_unchanged():
                ph.postcondition = "head-or-index-changed"
                mutation = WORKER_GIT_MUTATION if role == "worker" else REPAIR_GIT_MUTATION
                raise mutation(
                    f"the {role} moved HEAD or changed the index (commit, stage or checkout)"
                )
            derived, identity = await self.derive_candidate_unstored()
            if phase == "worker" and not derived.files:
                ph.postcondition = "head-and-index-unchanged; no-candidate-change"
                raise NO_CANDIDATE_CHANGE("the worker left no change in the worktree")
            if phase == "repair" and (
                not derived.files or self.initial is None or identity == self.initial.identity
            ):
                ph.postcondition = "head-and-index-unchanged; candidate-identity-unchanged-or-empty"
                raise REPAIR_NO_CHANGE(
                    "the repair did not produce a different, non-empty candidate"
                )
            label = "initial" if phase == "worker" else "repaired"
            cand = self.bind_candidate(label, derived, candidate_body(derived))
            ph.postcondition = "head-and-index-unchanged; candidate-derived"
            ph.reviewed_identity = cand.identity
            ph.outcome = "ok"
            return cand
        except BaseException as exc:
            ph.outcome = failure_code(exc)
            raise
        finally:
            self.close_phase(ph)

    async def run_review(self, phase: PhaseName, cand: _Candidate) -> VerdictName:
        """A fresh read-only reviewer over exactly ``cand`` (SPEC A-5)."""
        ph = self.open_phase(phase, "reviewer", self.deps.reviewer.name)
        ph.reviewed_identity = cand.identity
        scratch = self.scratch_dir()
        try:
            # The last review's after-binding seeds the stat cache (old, unchanged files only).
            tree0: Bound = await self.io(partial(bind_tree, self.wt.root, self.last_tree))
            ctl0: Bound = await self.io(partial(bind_control, self.wt))
            ph.binding = Binding(
                worktree_tree=tree0.digest, git_control=ctl0.digest, entries=len(tree0.entries)
            )
            prompt = review_prompt(self.a.request.task, cand.identity, cand.record.body, cand.patch)
            failure: ProviderFailure | None = None
            try:
                result = await self.deps.reviewer.run_reviewer(
                    worktree=self.wt.root,
                    prompt=prompt,
                    timeout_ms=self.a.request.timeout_ms,
                    route=self.deps.route,
                    scratch=scratch,
                )
                ph.result = result
                self.store_outputs(ph, result)
            except BaseException as exc:
                typed = None if interrupted(exc) else typed_error(exc)
                if not isinstance(typed, ProviderFailure):
                    raise
                failure = typed
            # Mutation is judged first and regardless of how the reviewer ended.
            ctl1 = await self.io(partial(bind_control, self.wt, ctl0))
            tree1 = await self.io(partial(bind_tree, self.wt.root, tree0))
            self.last_tree = tree1
            moved = changed_paths(ctl0, ctl1) or changed_paths(tree0, tree1)
            same_identity = False
            if not moved:
                _, again = await self.derive_candidate_unstored()
                same_identity = again == cand.identity
            if moved or not same_identity:
                ph.postcondition = "worktree-tree-or-git-control-or-candidate-changed"
                raise REVIEWER_MUTATION("the reviewer changed the worktree, git state or candidate")
            ph.postcondition = "worktree-tree-git-control-and-candidate-unchanged"
            if failure is not None:
                if failure.spec is PROVIDER_PROTOCOL:
                    raise REVIEWER_PROTOCOL(
                        "the reviewer did not return APPROVE or REQUEST_CHANGES in the schema"
                    ) from failure
                raise failure
            verdict = ph.result.verdict if ph.result else None
            if verdict is None or verdict.verdict not in ("APPROVE", "REQUEST_CHANGES"):
                raise REVIEWER_PROTOCOL(
                    "the reviewer did not return APPROVE or REQUEST_CHANGES in the schema"
                )
            ph.verdict = verdict.verdict
            if phase == "initial_review":
                self.first_verdict = {"verdict": verdict.verdict, "summary": verdict.summary}
            ph.outcome = verdict.verdict
            return verdict.verdict
        except BaseException as exc:
            if ph.outcome == "interrupted":
                ph.outcome = failure_code(exc)
            raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            self.close_phase(ph)

    async def derive_candidate_unstored(self) -> tuple[DerivedCandidate, str]:
        assert self.base is not None
        d = await self.io(partial(derive, self.wt, self.base.commit, self.base.tree))
        return d, candidate_body(d).identity()

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
        for rec in reversed(self.phases):
            if rec.phase == "initial_review":
                for ref in rec.evidence:
                    if ref.role.endswith("-verdict"):
                        path = ev.resolve_evidence_path(ref, self.a.receipt)
                        return ev.read_nofollow(path).decode("utf-8", "replace")
        # No verdict file was produced: the validated verdict is all the reviewer said.
        return json.dumps(self.first_verdict or {}, ensure_ascii=False)

    # -- the cycle -----------------------------------------------------------------------
    async def cycle(self) -> RunOutcome:
        await self.io(self.store.claim)
        commit = self.a.base_commit
        idx = await self.io(partial(index_tree, self.wt))
        self.base = BaseRecord(
            commit=commit,
            tree=self.a.base_tree,
            index_tree=idx,
            isolation="factory-created-linked-git-worktree"
            if self.creation is not None
            else "caller-supplied-linked-git-worktree",
        )
        self.entry_ref = await self.io(partial(head_ref, self.wt))
        task = self.a.request.task

        self.stage("worker_running", 4)
        self.initial = await self.run_editor("worker", worker_prompt(task))
        self.stage("worker_completed", 3)

        self.stage("initial_review_running", 3)
        first = await self.run_review("initial_review", self.initial)
        self.verdict = first
        if first == "APPROVE":
            self.stage("initial_review_verdict", 0, verdict=first)
            return self.finish("completed", int(ExitCode.OK), None)
        self.stage("initial_review_verdict", 2, verdict=first)

        self.stage("repair_running", 2)
        body = self.initial.record.body
        self.repaired = await self.run_editor(
            "repair",
            repair_prompt(
                task, self.initial.identity, body, self.initial.patch, self.reviewer_output()
            ),
        )
        self.stage("repair_completed", 1)

        self.stage("final_review_running", 1)
        final = await self.run_review("final_review", self.repaired)
        self.verdict = final
        self.stage("final_review_verdict", 0, verdict=final)
        if final == "APPROVE":
            return self.finish("completed", int(ExitCode.OK), None)
        return self.finish("rejected", int(ExitCode.REJECTED), None)


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
    safely(partial(observer.stage, "validating", remaining_invocations=4))
    if prelude is not None:
        return await _created_run(prelude, deps)
    first = await trio.to_thread.run_sync(admit, request)
    with hold_worktree(first.worktree):
        # Admitted again under the lock: a run that ended meanwhile may have left changes.
        admitted = await trio.to_thread.run_sync(admit, request)
        return await _admitted_run(admitted, deps)


async def _admitted_run(admitted: Admitted, deps: AgentDeps) -> RunOutcome:
    run = _Run(admitted, deps)
    reserve(admitted.receipt, receipt_bytes(run.receipt("running", None, None)))
    return await _closing(run, run.cycle)


async def _created_run(prelude: Prelude, deps: AgentDeps) -> RunOutcome:
    run = _Run(prelude.planned, deps, prelude.record)
    reserve(prelude.planned.receipt, receipt_bytes(run.receipt("running", None, None)))
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
        if interrupted(exc):
            run.finish(
                "interrupted",
                int(ExitCode.INTERRUPTED),
                ErrorRecord(
                    code=INTERRUPTED.name,
                    message=f"the run was interrupted; {INTERRUPTED.next_step}",
                ),
            )
            raise
        typed = typed_error(exc)
        if typed is not None:
            # After the reservation every typed error is a failure (4), never a refusal.
            return run.finish(
                "failed",
                int(ExitCode.FAILURE),
                ErrorRecord(code=typed.code, message=without_paths(typed.message)),
            )
        run.finish(
            "failed",
            int(ExitCode.INTERNAL),
            ErrorRecord(code=INTERNAL.name, message=f"internal error; {INTERNAL.next_step}"),
        )
        raise

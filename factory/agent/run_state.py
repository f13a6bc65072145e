"""The state of one admitted agent run and its bookkeeping effects (SPEC A-2, A-7, A-8):
stages for the observer, phase records, evidence, the candidate's binding, the git
directories' re-binding and the terminal receipt. :mod:`factory.agent.run` drives the
cycle over it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import trio

from factory.agent import evidence as ev
from factory.agent import phases
from factory.agent.admission import Admitted
from factory.agent.binding import Bound, changed_paths
from factory.agent.control import IndexFiles, bind_control, own_index_records
from factory.agent.deps import AgentDeps, RunOutcome
from factory.agent.faults import ROUTE_EVIDENCE_FAILED, SCRATCH_UNAVAILABLE
from factory.agent.identity import candidate_body
from factory.agent.observer import Stage, safely
from factory.agent.receipt import (
    AgentReceipt,
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
from factory.errors import Code, FactoryError
from factory.fsio import atomic_replace, physically_inside
from factory.gitio.candidate import DerivedCandidate, derive
from factory.gitio.create import WORKTREE_CREATE_MISMATCH
from factory.gitio.index_entries import IndexEntries, read_index_entries
from factory.gitio.rawfs import StatCache
from factory.gitio.snapshot import Baseline
from factory.gitio.worktree import head_commit, head_ref
from factory.proc import Captured
from factory.proc.procfs import boot_id, read_stat
from factory.provider_api import ProviderResult, Spool, partial_of
from factory.runs.registry import foreign_labels, is_foreign, registry_label

T = TypeVar("T")


_MEDIA = {"stdout": ev.JSONL, "stderr": ev.TEXT, "verdict": ev.JSON}
_EVIDENCE_PREFIX = {
    "worker": "worker",
    "initial_review": "initial-review",
    "repair": "repair",
    "final_review": "final-review",
}


async def in_thread(fn: Callable[[], T]) -> T:
    """Run local git or filesystem work in a worker thread (observers' timers keep ticking)."""
    return await trio.to_thread.run_sync(fn)


class RunState:
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
        # the last read of the index entries, with the index files' records it was read
        # under (the git directories' binding taken just before the read)
        self.index_read: tuple[IndexFiles | None, IndexEntries] | None = None
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
        head = await in_thread(partial(head_commit, self.wt))
        ref = await in_thread(partial(head_ref, self.wt))
        index = await self.index_entries()
        return (head, ref, index) == (base.commit, self.entry_ref, self.entry_index)

    async def bind_entry_index(self) -> None:
        """At entry: bind the git directories, then take the index entries' digest — the
        admission's read while this binding shows the index files it was read under, else
        read now. Bound first, an index written in between shows as changed, never hidden."""
        self.git_state = await in_thread(partial(bind_control, self.wt))
        if self.index_read is None:
            self.index_read = self.a.index_read
        self.entry_index = await self.index_entries()

    def index_as_read(self) -> IndexEntries | None:
        """The last read of the index entries when the git directories' binding just
        taken holds the index files with the records they had then (the same bytes, so
        the same entries); ``None`` when they changed since, or when the records vouch for
        nothing (:func:`~factory.agent.control.own_index_records`: a symlinked index)."""
        state, seen = self.git_state, self.index_read
        if state is None or seen is None or seen[0] is None:
            return None
        return seen[1] if own_index_records(state) == seen[0] else None

    async def index_entries(self) -> str:
        """The index entries' digest now (called right after :meth:`git_moved`): the last
        read's while :meth:`index_as_read` vouches for it, else read from git again (the
        binding it is checked against was taken before the read)."""
        seen = self.index_as_read()
        if seen is not None:
            return seen.digest
        read = await in_thread(partial(read_index_entries, self.wt.root))
        files = own_index_records(self.git_state) if self.git_state is not None else None
        self.index_read = (files, read)
        return read.digest

    async def derive(self, *, details: bool = True) -> tuple[DerivedCandidate, str]:
        """Derive the candidate now (called right after :meth:`index_entries`, so the
        index listing it reuses is the current one)."""
        base = self.rec.base
        assert base is not None
        d = await in_thread(
            partial(
                derive,
                self.wt,
                base.commit,
                base.tree,
                self.baseline,
                cache=self.derive_cache,
                details=details,
                index=self.index_as_read(),
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

    async def git_moved(self, ignore: Callable[[bytes], bool] | None = None) -> list[bytes]:
        """Bind the git directories again; the labels changed since the last binding."""
        before = self.git_state
        after = await in_thread(partial(bind_control, self.wt, before))
        self.git_state = after
        if before is None:
            return []
        changed = changed_paths(before, after, ignore)
        if not changed:
            return []
        # Other factory runs of this repository create branches and worktrees meanwhile:
        # theirs, by the registry, and never this run's own (factory.runs.registry).
        foreign = await in_thread(partial(foreign_labels, self.wt.common_dir, None, self.wt.root))
        return [p for p in changed if not (registry_label(p) or is_foreign(p, foreign))]

    def store_mutation(self, ph: OpenPhase, paths: list[bytes]) -> None:
        """The sorted changed paths as evidence ``<phase>-mutation-paths`` (each path's
        bytes + NUL; ``worktree/…``, ``git-dir/…``, ``common-dir/…``)."""
        data = b"".join(p + b"\0" for p in sorted(paths))
        role = f"{_EVIDENCE_PREFIX[ph.phase]}-mutation-paths"
        ph.evidence.append(self.store.put(role, data, ev.PATHS))

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


def _this_process() -> FactoryProcess | None:
    """This process's identity for the receipt (None where ``/proc`` is missing), so a
    reservation left by a killed factory reads as abandoned."""
    st = read_stat(os.getpid())
    boot = boot_id()
    if st is None or not boot:
        return None
    return FactoryProcess(pid=st.pid, start_ticks=st.starttime, boot_id=boot)

"""What a run's receipt will say, gathered while the run goes (SPEC A-7, A-8).

No I/O and no clock: the run passes times in. :class:`RunRecord` builds the reservation and
the terminal receipt with keywords, so a mistyped field is a type error, not a runtime
surprise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from factory import __version__
from factory.agent.admission import Admitted
from factory.agent.receipt import (
    DECLARED_RESIDUALS,
    AgentReceipt,
    BaseRecord,
    Binding,
    CandidateRecord,
    Candidates,
    ErrorRecord,
    EvidenceRef,
    FactoryProcess,
    PhaseName,
    PhaseRecord,
    RoleName,
    Status,
    Timings,
    VerdictName,
)
from factory.provider_api import ProviderResult, Route


@dataclass(frozen=True, slots=True)
class Candidate:
    """A bound candidate and the patch bytes the reviewer and the repair are shown."""

    record: CandidateRecord
    patch: bytes

    @property
    def identity(self) -> str:
        return self.record.identity


@dataclass
class OpenPhase:
    """A provider phase while it runs; :meth:`RunRecord.close` turns it into a record."""

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


@dataclass
class RunRecord:
    """The receipt's content so far."""

    admitted: Admitted
    route: Route
    started_at: str
    base: BaseRecord | None = None
    phases: list[PhaseRecord] = field(default_factory=list)
    initial: Candidate | None = None
    repaired: Candidate | None = None
    verdict: VerdictName | None = None
    route_evidence: EvidenceRef | None = None
    factory_process: FactoryProcess | None = None
    trace_id: str | None = None

    def close(self, ph: OpenPhase, *, ended_at: str, duration_ms: int) -> PhaseRecord:
        """Append the record of the finished phase ``ph`` and return it."""
        r = ph.result
        rec = PhaseRecord(
            phase=ph.phase,
            role=ph.role,
            profile=r.profile if r else ph.profile,
            cli_version=r.cli_version if r else None,
            requested_authority=r.requested_authority if r else "",
            argv_shape=list(r.argv_shape) if r else [],
            process_exit_code=r.exit_code if r else None,
            swept_processes=r.swept_processes if r else None,
            observed_postcondition=ph.postcondition,
            outcome=ph.outcome,
            verdict=ph.verdict,
            reviewed_identity=ph.reviewed_identity,
            binding=ph.binding,
            evidence=list(ph.evidence),
            child_env_names=sorted(r.env_names) if r and r.env_names is not None else None,
            started_at=ph.started_at,
            ended_at=ended_at,
            duration_ms=duration_ms,
        )
        self.phases.append(rec)
        return rec

    def receipt(
        self,
        status: Status,
        exit_code: int | None,
        error: ErrorRecord | None,
        *,
        ended_at: str | None,
        duration_ms: int | None,
    ) -> AgentReceipt:
        """The receipt, closed by its revision (``ended_at`` ``None`` while running)."""
        request = self.admitted.request
        return AgentReceipt(
            status=status,
            exit_code=exit_code,
            execution=self.route.execution,
            route=self.route.name,
            factory_version=__version__,
            task=request.task,
            worktree=os.fspath(self.admitted.worktree.root),
            evidence_dir=os.fspath(self.admitted.evidence),
            timeout_ms=request.timeout_ms,
            base=self.base,
            phases=list(self.phases),
            candidate=Candidates(
                initial=self.initial.record if self.initial else None,
                repaired=self.repaired.record if self.repaired else None,
            ),
            verdict=self.verdict,
            error=error,
            residuals=list(DECLARED_RESIDUALS),
            route_evidence=self.route_evidence,
            factory_process=self.factory_process,
            trace_id=self.trace_id,
            timings=Timings(started_at=self.started_at, ended_at=ended_at, duration_ms=duration_ms),
        ).closed()

    def first_review(self) -> PhaseRecord | None:
        """The initial review's record, once it ended."""
        return next((p for p in self.phases if p.phase == "initial_review"), None)

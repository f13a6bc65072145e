"""The operations the review state machine applies (:func:`factory.review.machine.apply`):
one frozen value per transition, built by the commands from their validated inputs."""

from __future__ import annotations

from dataclasses import dataclass

from factory.review.judgement import RefuterInput, ValidatorInput
from factory.review.names import LensName
from factory.review.results import LensResult
from factory.review.risk import Risk
from factory.review.state import FinalEvidence, Predecessor, Snapshot


@dataclass(frozen=True, slots=True)
class Create:
    """``review start``: a new lineage in ``reviewing``."""

    lineage_id: str
    policy_hash: str
    focus: LensName
    snapshot: Snapshot
    risk: Risk
    changed_lines: int
    #: A recovered successor (issue 13): generation + 1 and the predecessor it replaces.
    generation: int = 1
    predecessor: Predecessor | None = None


@dataclass(frozen=True, slots=True)
class Invalidate:
    """``review invalidate``: a pristine reviewing lineage ends invalidated (issue 13)."""

    reason: str


@dataclass(frozen=True, slots=True)
class RecordLens:
    """Capture one selected lens's result (from a lens run, a file or a replay)."""

    result: LensResult


@dataclass(frozen=True, slots=True)
class CompleteReview:
    """Admit the findings of all lens results (with the one refuter batch, if needed)."""

    refuter: RefuterInput | None


@dataclass(frozen=True, slots=True)
class Forecast:
    """``--correction-lines N``: the size of the correction, before editing."""

    lines: int


@dataclass(frozen=True, slots=True)
class CompleteFix:
    """``--validation``: the measured fix delta and the targeted validator's checks."""

    fix: Snapshot
    candidate: Snapshot
    actual_lines: int
    validation: ValidatorInput


@dataclass(frozen=True, slots=True)
class Finish:
    """``--evidence`` / ``--evidence-run`` (or ``--failed``) in ``validating``."""

    evidence: FinalEvidence


@dataclass(frozen=True, slots=True)
class Abandon:
    """``--failed`` before validating: stop the lineage as escalated."""

    evidence: FinalEvidence | None


Operation = (
    Create | RecordLens | CompleteReview | Forecast | CompleteFix | Finish | Abandon | Invalidate
)
OPERATION_NAMES: dict[type, str] = {
    Invalidate: "invalidate",
    Create: "start",
    RecordLens: "record-lens",
    CompleteReview: "complete-review",
    Forecast: "forecast",
    CompleteFix: "complete-fix",
    Finish: "finish",
    Abandon: "abandon",
}

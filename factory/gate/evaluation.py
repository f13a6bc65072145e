"""The ``factory.gate-evaluation/1`` record as a strict model (SPEC G: the evaluator's
candidate: inputs, delta, trace).

The evaluator builds one :class:`EvaluationRecord` with keywords; its JSON value (by alias,
sorted by RFC 8785 when hashed) is the same bytes the gate has always stored (a golden
file pins them). A value a condition resolved to and a value an is the scenario's JSON
value, so it is ``Any``; a completion trace is a recursive tree of
:class:`TraceNode`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from pydantic import Field, SkipValidation

from factory.models import SparseModel, StrictModel

EVALUATION_SCHEMA: Final = "factory.gate-evaluation/1"

Result = Literal["true", "false", "unknown", "failed"]
StageState = Literal["completed", "open", "ready", "not-ready"]


class Base(StrictModel):
    """The accepted head the candidate extends."""

    head: str
    seq: int


class SignatureRef(StrictModel):
    key_id: str
    ed25519: str


class EvidenceRef(StrictModel):
    """A record's identity in an evaluation: id, declared digest, signature."""

    id: str
    sha256: str
    signature: SignatureRef | None


class IntentRecord(StrictModel):
    """An intent an accepted delta makes eligible."""

    id: str
    kind: str
    detail: str | None
    source: str


class Delta(StrictModel):
    """What accepting the candidate changes."""

    complete: list[str]
    open: list[str]
    scenario_complete: bool
    intents: list[IntentRecord]


class FailureRecord(StrictModel):
    family: Literal["operational", "integrity"]
    code: str
    message: str


class Rejection(StrictModel):
    """A record the condition's evidence policy did not accept, and why."""

    record: str
    reasons: list[str]


class ConditionResult(StrictModel):
    """One condition's resolution and result, with what decided it."""

    condition: str
    resolution: Literal["present", "observed-absent", "missing", "insufficient", "failed"]
    result: Result
    record: str | None
    value: Any
    failures: list[FailureRecord]
    rejected: list[Rejection]


class TraceNode(SparseModel):
    """One node of a completion law's trace: a leaf (``ref``) or an operator with its
    ``items`` (``k`` for a quorum)."""

    result: Result
    ref: str | None = None
    op: Literal["all", "any", "quorum", "not"] | None = None
    items: list[TraceNode] | None = None
    k: int | None = None


class StageTrace(SparseModel):
    """One stage in this pass: its state before and after, and the trace of its
    completion law when it was evaluated."""

    stage: str
    before: StageState
    after: StageState
    completion: TraceNode | None = None


if TYPE_CHECKING:  # what the evaluator passes: the JSON values it built
    EvidenceList: TypeAlias = list[dict[str, Any]]
    ConditionList: TypeAlias = list[dict[str, Any]]
    StageList: TypeAlias = list[dict[str, Any]]
else:  # what the schema states (see EvaluationRecord)
    EvidenceList = SkipValidation[list[EvidenceRef]]
    ConditionList = SkipValidation[list[ConditionResult]]
    StageList = SkipValidation[list[StageTrace]]


class EvaluationRecord(StrictModel):
    """The candidate record; replaying the same inputs gives the same bytes.

    ``evidence``, ``conditions`` and ``stages`` grow with the scenario (10,000 of each in
    the benchmark) and are the evaluator's own derivations (a tuple per outcome, a trace
    per law): they are declared with their models, so the published schema states them,
    but not re-validated when the evaluator builds a record (that would double the cost
    of an evaluation); a stored record is checked by replay, byte for byte, instead, and
    the gate's tests validate every record they make against the published schema.
    """

    schema_id: Literal["factory.gate-evaluation/1"] = Field(
        default=EVALUATION_SCHEMA, alias="schema"
    )
    run: str
    scenario: str
    base: Base
    now: str
    opens: list[str]
    evidence: EvidenceList
    delta: Delta
    run_completed_before: bool
    conditions: ConditionList
    unevaluated: list[str]
    stages: StageList

    def json_value(self) -> dict[str, Any]:
        """The record's JSON value: the validated parts dumped, the derived lists as built."""
        value = self.model_dump(mode="json", by_alias=True, exclude=_DERIVED)
        value.update(evidence=self.evidence, conditions=self.conditions, stages=self.stages)
        return value


_DERIVED: Final = {"evidence", "conditions", "stages"}

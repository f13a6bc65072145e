"""The ``factory.smoke-report/1`` document and the trace it records (SPEC B-6). Pure.

Three shapes share the schema id: the reservation (``running``), the terminal record of a
run that did not complete (``failed`` or ``interrupted``, with the fixed point when the run
owned the data dir, and the error), and the completed report (the trace, the fixed point,
the verification summary, and an error when a check failed). The bytes written are the
canonical JSON of the model plus LF.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from factory.bus.logfile import FixedPoint
from factory.bus.smoke_reserve import COMMAND, EXECUTION, REPORT_FORMAT
from factory.bus.verify import BusVerification, GateResult
from factory.models import ErrorRecord, StrictModel

__all__ = ["COMMAND", "EXECUTION", "REPORT_FORMAT"]  # defined stdlib-only (smoke_reserve.py)


class Artifact(StrictModel):
    """The artifact the conversation is about: path as given, size, SHA-256 hex."""

    path: str
    bytes: int
    sha256: str


class TraceActor(StrictModel):
    ref: str
    name: str
    kind: str


class TraceMessage(StrictModel):
    message_id: str = Field(alias="messageId")
    correlation_id: str = Field(alias="correlationId")
    sender: str = Field(alias="from")
    to: str
    kind: str


class TraceAck(StrictModel):
    message_id: str = Field(alias="messageId")
    acked_by: str = Field(alias="ackedBy")
    meaning: str


class TraceHandoff(StrictModel):
    message_id: str = Field(alias="messageId")
    correlation_id: str = Field(alias="correlationId")
    sender: str = Field(alias="from")
    to: str
    reply_to: str = Field(alias="replyTo")
    authority_transferred: list[str] = Field(alias="authorityTransferred")


class Trace(StrictModel):
    """What the tracer's conversation did, as the live server answered it."""

    actors: dict[str, TraceActor]
    messages: list[TraceMessage]
    acknowledgements: list[TraceAck]
    handoff: TraceHandoff
    correlation_id: str = Field(alias="correlationId")
    tool_surface: list[str] = Field(alias="toolSurface")


class VerificationSummary(StrictModel):
    """The part of ``factory.bus-verification/1`` the report carries."""

    ok: bool
    evidence_ok: bool = Field(alias="evidenceOk")
    evidence_gates_result: list[GateResult] = Field(alias="evidenceGatesResult")


class _Common(StrictModel):
    schema_id: Literal["factory.smoke-report/1"] = Field(default=REPORT_FORMAT, alias="format")
    ok: bool
    command: Literal["factory smoke"] = COMMAND
    execution: Literal["coordination-tracer; no code execution"] = EXECUTION
    data_dir: str = Field(alias="dataDir")
    artifact: Artifact
    task: str

    def data(self) -> bytes:
        """The exact bytes written and printed: canonical JSON plus LF."""
        return self.canonical() + b"\n"


class SmokeReservation(_Common):
    """The ``running`` record reserved before any effect."""

    status: Literal["running"] = "running"


class SmokeTerminal(_Common):
    """A run that did not complete: what the log held (``None`` when the run never owned
    the data dir) and why it ended."""

    status: Literal["failed", "interrupted"]
    evidence_log: FixedPoint | None = Field(alias="evidenceLog")
    error: ErrorRecord


class SmokeReport(_Common):
    """A completed conversation; ``status`` ``failed`` (with ``error``) when a check of
    :func:`judge` failed."""

    status: Literal["completed", "failed"]
    actors: dict[str, TraceActor]
    messages: list[TraceMessage]
    acknowledgements: list[TraceAck]
    handoff: TraceHandoff
    correlation_id: str = Field(alias="correlationId")
    evidence_log: FixedPoint = Field(alias="evidenceLog")
    verification: VerificationSummary
    tool_surface: list[str] = Field(alias="toolSurface")
    error: ErrorRecord | None = None

    def to_json_value(self) -> dict[str, Any]:
        """A passing report has no ``error`` key at all."""
        value = super().to_json_value()
        if value.get("error") is None:
            value.pop("error", None)
        return value


def judge(
    before: FixedPoint, after: FixedPoint, verification: BusVerification, trace: Trace
) -> list[str]:
    """What is wrong with a completed conversation (empty: it passes)."""
    from factory.bus.model import ACK_MEANING, VERBS

    problems = []
    if before != after:
        problems.append("the fixed point moved during verification")
    if not (verification.ok and verification.evidence_ok):
        failed = [c.id for c in verification.checks if not c.ok]
        problems.append(f"evidence gate failed: {', '.join(failed)}")
    if trace.tool_surface != list(VERBS):
        problems.append("the live server's tool list is not exactly the six verbs")
    if any(a.meaning != ACK_MEANING for a in trace.acknowledgements):
        problems.append("an acknowledgement claimed more than receipt")
    if trace.handoff.authority_transferred != []:
        problems.append("the handoff transferred authority")
    return problems

"""``factory.review-gate-result/1``: what ``factory review validate`` answers (SPEC R).

Exactly seven fields — ``schema, result, allowed, action, reason, denial, context`` —
which the decision gate's ``review-gate`` provider checks field for field
(:mod:`factory.gate.providers.review_gate`). ``result`` fixes ``action`` and ``allowed``:

========================  ===============================  ========
result                    action                           exit
========================  ===============================  ========
``allow``                 ``continue``                     0
``scope-changed``         ``create-new-lineage``           3
``invalidated``           ``explicit-maintainer-action``   3
``escalated``             ``stop``                         3
========================  ===============================  ========

A denial always carries ``{stage, code}`` from :data:`DENIALS` and ``context.next``: the
legal next commands, the first one also named in ``reason``. ``context.model_calls`` is
always 0 — a gate never asks a model anything.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from factory.models import StrictModel
from factory.review.gates.verdict import (
    ACTIONS,
    DENIALS,
    GATES,
    RESULT_SCHEMA,
    ActionName,
    GateName,
    ResultName,
    Verdict,
    deny,
)
from factory.review.receipt import ReviewReceipt

__all__ = [
    "ACTIONS",
    "DENIALS",
    "GATES",
    "RESULT_SCHEMA",
    "ActionName",
    "ArtifactView",
    "BoundaryView",
    "Denial",
    "GateContext",
    "GateName",
    "GateResult",
    "LiveView",
    "ResultName",
    "Verdict",
    "deny",
    "gate_result",
]


class Denial(StrictModel):
    stage: str
    code: str


class LiveView(StrictModel):
    """What the gate derived from git for its boundary."""

    kind: Literal["current-changes", "commit-range", "base-diff", "release"]
    base_tree: str | None
    candidate_tree: str
    paths_digest: str
    changed_paths: int
    head_commit: str | None
    staged_tree: str | None
    delivery_commits: tuple[str, ...]


class BoundaryView(StrictModel):
    """How pre-pr chose its boundary (``ls-remote --symref`` or ``--base-ref``)."""

    source: Literal["base-ref", "push-remote-default-branch"]
    remote: str | None
    ref: str | None
    commit: str | None
    merge_base: str | None


class ArtifactView(StrictModel):
    path: str
    sha256: str
    bytes: int


class GateContext(StrictModel):
    """Everything the gate derived or relied on (never authority by itself)."""

    gate: GateName
    repository: str
    lineage_id: str | None
    generation: int | None
    store_revision: str | None
    state: str | None
    receipt: ReviewReceipt | None
    live: LiveView | None
    boundary: BoundaryView | None
    artifacts: tuple[ArtifactView, ...]
    considered: tuple[str, ...]
    corrupt: tuple[str, ...]
    final_recheck: Literal["passed", "changed", "not-needed"]
    model_calls: Literal[0]
    next: tuple[str, ...]


class GateResult(StrictModel):
    """``factory.review-gate-result/1`` (see the module docstring)."""

    schema_id: Literal["factory.review-gate-result/1"] = Field(alias="schema")
    result: ResultName
    allowed: bool
    action: ActionName
    reason: str
    denial: Denial | None
    context: GateContext


def gate_result(verdict: Verdict, context: GateContext) -> GateResult:
    """The document for ``verdict`` (its action and ``allowed`` follow from the result)."""
    denial = None
    if verdict.denial is not None:
        stage, code = verdict.denial.split("/", 1)
        denial = Denial(stage=stage, code=code)
    return GateResult(
        schema_id=RESULT_SCHEMA,
        result=verdict.result,
        allowed=verdict.denial is None,
        action=ACTIONS[verdict.result],
        reason=verdict.reason,
        denial=denial,
        context=context.model_copy(update={"next": verdict.next}),
    )

"""The terminal review receipt ``factory.review-receipt/1`` (SPEC R): exactly the fourteen
fields of the reference's compact receipt, all derived from the state.

The receipt is a projection, never a second source of truth: loading a lineage re-derives
it from the state and fails closed when the file on disk is not that derivation. It binds
stable identity only (trees, digests, tier, lenses, resolved ids); live topology — which
remote, which base, which commit delivers it — belongs to the gates that re-derive it.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, ValidationError

from factory.documents.canonical import canonical_bytes_plain
from factory.models import StrictModel
from factory.review.documents import EMPTY_HASH, strict_json
from factory.review.errors import ReviewInputInvalid
from factory.review.names import LensName, RiskLevel
from factory.review.state import ReviewState

RECEIPT_SCHEMA: Final = "factory.review-receipt/1"
RECEIPT_FILE = "review-receipt.json"


class ReviewReceipt(StrictModel):
    """The fourteen fields, in the reference's order."""

    schema_id: Literal["factory.review-receipt/1"] = Field(alias="schema")
    lineage_id: str
    generation: int
    base_tree: str
    initial_review_tree: str
    final_candidate_tree: str
    paths_digest: str
    fix_delta_hash: str
    policy_hash: str
    evidence_hash: str
    risk_level: RiskLevel
    selected_lenses: tuple[LensName, ...]
    resolved_finding_ids: tuple[str, ...]
    terminal_state: Literal["approved", "escalated"]


def derive_receipt(state: ReviewState) -> ReviewReceipt:
    """The receipt of a terminal state.

    ``paths_digest`` is the *initial* snapshot's (a correction that reverts a file does not
    shrink the reviewed scope); ``fix_delta_hash`` and ``evidence_hash`` are the hash of no
    bytes when there was no passing correction or no final evidence; the resolved ids are
    the corroborated findings a passing correction attempt fixed, sorted.
    """
    if state.state not in ("approved", "escalated"):
        raise ValueError(f"a {state.state} lineage has no receipt")
    attempts = state.correction.attempts
    passed = any(a.outcome == "passed" for a in attempts)
    resolved = sorted(state.review.fix_finding_ids) if passed and state.review else []
    fe = state.final_evidence
    return ReviewReceipt(
        schema_id=RECEIPT_SCHEMA,
        lineage_id=state.lineage_id,
        generation=state.generation,
        base_tree=state.initial_snapshot.base_tree,
        initial_review_tree=state.initial_snapshot.candidate_tree,
        final_candidate_tree=state.current_snapshot.candidate_tree,
        paths_digest=state.initial_snapshot.paths_digest,
        fix_delta_hash=state.fix_delta_hash,
        policy_hash=state.policy_hash,
        evidence_hash=fe.evidence_hash if fe is not None else EMPTY_HASH,
        risk_level=state.risk.level,
        selected_lenses=state.lenses,
        resolved_finding_ids=tuple(resolved),
        terminal_state=state.state,
    )


def receipt_bytes(receipt: ReviewReceipt) -> bytes:
    """What ``review-receipt.json`` holds: canonical JSON and a newline."""
    return canonical_bytes_plain(receipt.to_json_value()) + b"\n"


def receipt_problem(data: bytes, state: ReviewState) -> str | None:
    """Why ``data`` is not the receipt ``state`` derives (None when it is)."""
    try:
        strict_json(data, what="the receipt", limit=1 << 20)
        parsed = ReviewReceipt.model_validate_json(data)
    except ReviewInputInvalid as exc:
        return exc.fact
    except ValidationError:
        return "the receipt does not parse as factory.review-receipt/1"
    if parsed != derive_receipt(state):
        return "the receipt is not the one its state derives"
    return None

"""What any successor of a stored state must preserve (checked by the store on every
replace, whatever code computed the successor).

The scope frozen at start never changes (tier, lenses, genesis, budget, policy, target);
the edge between the two states is one of :data:`EDGES`; history is append-only — lens
results are never replaced, an admitted review never changes, correction attempts only
grow, final evidence is never rewritten; and a terminal state has no successor.
"""

from __future__ import annotations

from typing import Final

from factory.review.names import TERMINAL, StateName
from factory.review.state import ReviewState

EDGES: Final[frozenset[tuple[StateName, StateName]]] = frozenset(
    {
        ("reviewing", "reviewing"),
        ("reviewing", "correction_required"),
        ("reviewing", "validating"),
        ("reviewing", "escalated"),
        ("correction_required", "correction_required"),
        ("correction_required", "validating"),
        ("correction_required", "escalated"),
        ("validating", "approved"),
        ("validating", "escalated"),
    }
)
FROZEN: Final = (
    "schema_id",
    "lineage_id",
    "generation",
    "predecessor",
    "policy_hash",
    "focus",
    "initial_snapshot",
    "genesis_paths",
    "risk",
    "lenses",
    "changed_files",
    "changed_lines",
    "correction_budget",
)


def successor_problem(prev: ReviewState, new: ReviewState) -> str | None:
    """Why ``new`` cannot follow ``prev`` (None when it can)."""
    if prev.state in TERMINAL:
        return f"lineage {prev.lineage_id} is {prev.state}: a terminal state has no successor"
    for name in FROZEN:
        if getattr(prev, name) != getattr(new, name):
            return f"{name} is frozen at start and cannot change"
    if (prev.state, new.state) not in EDGES:
        return f"{prev.state} -> {new.state} is not a legal transition"
    if not set(prev.lens_results) <= set(new.lens_results):
        return "lens results are never replaced or removed"
    if prev.review is not None and new.review != prev.review:
        return "an admitted review never changes"
    attempts = prev.correction.attempts
    if new.correction.attempts[: len(attempts)] != attempts:
        return "correction attempts are append-only"
    if prev.final_evidence is not None and new.final_evidence != prev.final_evidence:
        return "final evidence is never rewritten"
    return None

"""The closed vocabularies of review transactions: lenses, severities, causality, states.

Lens names are the short names everywhere (flags, records, receipts); there is no second
spelling to confuse (the reference's ``reliability`` vs ``review-reliability`` mix-up
escalated real reviews).
"""

from __future__ import annotations

import re
from typing import Final, Literal, get_args

LensName = Literal["risk", "resilience", "readability", "reliability"]
#: Canonical lens order: the order a high-risk review selects them in.
LENS_ORDER: Final[tuple[LensName, ...]] = ("risk", "resilience", "readability", "reliability")
#: Finding id prefixes, fixed per lens (R1 risk, R2 readability, R3 reliability, R4 resilience).
LENS_PREFIX: Final[dict[str, str]] = {
    "risk": "R1",
    "readability": "R2",
    "reliability": "R3",
    "resilience": "R4",
}
DEFAULT_FOCUS: Final[LensName] = "reliability"
MAX_FINDINGS_PER_LENS = 999  # ids are -NNN
LENS_ROLE_PREFIX = "lens-"  # evidence blob role of a lens's raw answer

Severity = Literal["BLOCKER", "CRITICAL", "WARNING", "SUGGESTION"]
SEVERE: Final = frozenset({"BLOCKER", "CRITICAL"})
SEVERITY_RANK: Final[dict[str, int]] = {"BLOCKER": 0, "CRITICAL": 1, "WARNING": 2, "SUGGESTION": 3}
EvidenceClass = Literal["deterministic", "inferential", "insufficient"]
Causality = Literal[
    "introduced", "behavior-activated", "worsened", "pre-existing", "base-only", "unknown"
]
CANDIDATE_CAUSAL: Final = frozenset({"introduced", "behavior-activated", "worsened"})
RefuterOutcome = Literal["corroborated", "refuted", "inconclusive"]
Outcome = Literal["corroborated", "refuted", "inconclusive", "info"]

StateName = Literal["reviewing", "correction_required", "validating", "approved", "escalated"]
TERMINAL: Final = frozenset({"approved", "escalated"})
RiskLevel = Literal["low", "medium", "high"]
RiskCode = Literal[
    "empty_change",
    "hot_path",
    "service_token",
    "shell_source",
    "executable_mode",
    "large_change",
    "docs_only",
    "large_docs_change",
    "configuration_change",
    "executable_change",
]
EscalationReason = Literal[
    "inconclusive_finding",
    "forecast_over_budget",
    "correction_over_budget",
    "zero_line_attempt",
    "attempts_exhausted",
    "verification_failed",
    "declared_failed",
]
MAX_FAILED_ATTEMPTS = 3
BUDGET_CAP = 200

LINEAGE_RE: Final = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
LINEAGE_MAX = 128
FINDING_ID_RE: Final = re.compile(r"^R[1-4]-[0-9]{3}$")


def lens_names() -> tuple[str, ...]:
    """Every lens name, in canonical order."""
    return tuple(get_args(LensName))


def finding_id(lens: str, index: int) -> str:
    """The code-assigned id of the ``index``-th (0-based) finding of ``lens``."""
    return f"{LENS_PREFIX[lens]}-{index + 1:03d}"


def valid_lineage(text: str) -> bool:
    """Lineage ids are lower-case kebab words, at most 128 bytes."""
    return len(text.encode()) <= LINEAGE_MAX and bool(LINEAGE_RE.fullmatch(text))

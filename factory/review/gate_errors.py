"""Typed errors of review gates, recovery, invalidation, ceremonies and hooks (SPEC F-2,
F-3, R), registered once. The families are review's own (:mod:`factory.review.errors`):
a refusal names the legal next commands, so none of these is a dead end.

A gate *denial* is not an error: it is a verdict document (exit 3). These codes are for
what stops a command before it can answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from factory.review.errors import ReviewInputInvalid, ReviewRefused


class AuthorizationRefused(ReviewRefused):
    """The maintainer authorization binding is missing or not exact (exit 2); the refusal
    carries the exact text the action needs (``expected``)."""

    def __init__(self, fact: str, *, expected: bytes, next: Sequence[str]) -> None:
        super().__init__(fact, code=AUTHORIZATION_INVALID, next=next)
        self.expected = expected.decode("utf-8")


_NEXT = "run one of the legal next commands it names"

NOT_PRISTINE = ReviewRefused.define(
    "review-not-pristine",
    "only a reviewing lineage with nothing recorded can be invalidated: " + _NEXT,
)
RECOVER_NOT_ELIGIBLE = ReviewRefused.define(
    "review-recover-not-eligible", "pick the disposition that fits the predecessor: " + _NEXT
)
RECOVER_REVISION = ReviewRefused.define(
    "review-recover-revision-mismatch",
    "inspect the predecessor again (factory review show) and pass its current revision",
)
RECOVER_FORK = ReviewRefused.define(
    "review-recover-fork", "continue the existing successor instead of forking: " + _NEXT
)
AUTHORIZATION_INVALID = AuthorizationRefused.define(
    "review-authorization-invalid",
    "write exactly the expected_authorization text (LF line ends) to the file and rerun",
)
CEREMONY_WRONG_CLASS = ReviewRefused.define(
    "review-ceremony-wrong-class", "use the ceremony the anomaly's class needs: " + _NEXT
)
CEREMONY_NOT_UNIQUE = ReviewRefused.define(
    "review-ceremony-not-unique",
    "repair one anomaly at a time, naming every other one of its class with --also-invalid: "
    "run one of the commands it names",
)
HOOK_NOT_OWNED = ReviewRefused.define(
    "review-hook-not-owned",
    "free the entry it names (a folder or device, or a taken .factory-previous name), rerun",
)
GATE_USAGE = ReviewInputInvalid.define(
    "review-gate-usage", "see 'factory review validate --help' for which flag fits which gate"
)

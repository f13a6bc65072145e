"""The verdict of a gate as plain data: the denial codes, the result each one carries, and
:class:`Verdict` (pure, and importable without pydantic, so the hook path of
:mod:`factory.review.gates.validate` can decide without building a model).

:mod:`factory.review.gates.result` builds the published ``factory.review-gate-result/1``
document from a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

RESULT_SCHEMA: Final = "factory.review-gate-result/1"
GateName = Literal["pre-commit", "pre-push", "pre-pr", "release"]
GATES: Final[tuple[GateName, ...]] = ("pre-commit", "pre-push", "pre-pr", "release")
ResultName = Literal["allow", "scope-changed", "invalidated", "escalated"]
ActionName = Literal["continue", "create-new-lineage", "explicit-maintainer-action", "stop"]
ACTIONS: Final[dict[str, ActionName]] = {
    "allow": "continue",
    "scope-changed": "create-new-lineage",
    "invalidated": "explicit-maintainer-action",
    "escalated": "stop",
}

#: Every denial ``stage/code`` and the result it always carries.
DENIALS: Final[dict[str, ResultName]] = {
    "receipt-discovery/missing": "invalidated",
    "receipt-discovery/unrelated": "scope-changed",
    "receipt-discovery/scope-changed": "scope-changed",
    "receipt-discovery/ambiguous": "invalidated",
    "receipt-discovery/authority-corrupted": "invalidated",
    "receipt-validation/unknown-lineage": "invalidated",
    "receipt-validation/corrupted": "invalidated",
    "receipt-validation/not-terminal": "invalidated",
    "receipt-validation/receipt-missing": "invalidated",
    "receipt-validation/superseded": "invalidated",
    "receipt-validation/graph-invalid": "invalidated",
    "receipt-validation/invalidated": "invalidated",
    "receipt-validation/rehearsal": "invalidated",
    "receipt-validation/escalated": "escalated",
    "receipt-binding/candidate-or-paths-mismatch": "scope-changed",
    "receipt-binding/base-mismatch": "invalidated",
    "receipt-binding/staged-tree-mismatch": "invalidated",
    "receipt-binding/filtered-representation": "escalated",
    "delivery-derivation/unavailable": "invalidated",
    "delivery-derivation/empty-commit": "invalidated",
    "delivery-derivation/not-head": "invalidated",
    "delivery-derivation/partial": "invalidated",
    "delivery-derivation/outside-genesis": "invalidated",
    "delivery-derivation/first-publication": "invalidated",
    "boundary-selection/unavailable": "invalidated",
    "release-evidence/artifact-unreadable": "invalidated",
    "final-authorization/changed": "invalidated",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pure decision: allow (``denial`` None) or one denial, with the next commands."""

    denial: str | None
    reason: str
    next: tuple[str, ...]

    @property
    def result(self) -> ResultName:
        return "allow" if self.denial is None else DENIALS[self.denial]


def deny(code: str, reason: str, *next_commands: str) -> Verdict:
    """A denial ``code`` (a key of :data:`DENIALS`) naming its first next command."""
    if code not in DENIALS:
        raise AssertionError(f"unknown denial code {code}")
    if not next_commands:
        raise AssertionError(f"denial {code} without a next command")
    return Verdict(code, f"{reason} (next: {next_commands[0]})", tuple(next_commands))

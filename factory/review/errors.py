"""Typed errors of review transactions (SPEC F-2, F-3, R).

Every refusal carries the legal next commands (``next``) so that no state is a dead end:
the message names at least one of them, and the command's JSON output repeats them.
"""

from __future__ import annotations

from collections.abc import Sequence

from factory.errors import Failure, IntegrityFailure, Refused, UsageError


class ReviewRefused(Refused):
    """The operation is not legal here; nothing changed (exit 2).

    Attributes:
        next: the legal next commands at this point (templates, most useful first).
    """

    default_code = "review-refused"

    def __init__(self, message: str, *, code: str | None = None, next: Sequence[str] = ()) -> None:
        hint = f"; next: {next[0]}" if next and next[0] not in message else ""
        super().__init__(message + hint, code=code)
        self.next = tuple(next)


class ReviewInputInvalid(UsageError):
    """A reviewer, refuter, validator, policy or evidence input is malformed (exit 2).

    Malformed input changes nothing and consumes nothing.
    """

    default_code = "review-input-invalid"


class ReviewCasConflict(Failure):
    """The lineage moved since it was read: compare-and-swap refused the write (exit 4).

    Rerunning the same command reloads the new revision and is safe.
    """

    default_code = "review-cas-conflict"


class ReviewStoreBusy(Failure):
    """Another process holds the review store's lock (exit 4); the lock is never broken."""

    default_code = "review-store-busy"


class ReviewRecordCorrupt(IntegrityFailure):
    """A lineage's record (or receipt) fails validation; it is never repaired in place."""

    default_code = "review-record-corrupt"


class ReviewCaptureFailed(Failure):
    """A lens answered but its result could not be captured; the raw payload was preserved
    as an incident artifact for ``finalize --replay-preserved`` (exit 4)."""

    default_code = "review-capture-failed"

    def __init__(self, message: str, *, preserved: str | None = None) -> None:
        super().__init__(message)
        self.preserved = preserved

"""Typed errors of review transactions, registered once (SPEC F-2, F-3, R).

A :class:`ReviewRefused` also carries the *legal next commands* of the lineage at that
moment (``next``): the first one is named in the message, and every command's JSON output
repeats the whole list, so no refusal is a dead end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from factory.errors import Code, FactoryError, Failure, IntegrityFailure, Refused, UsageError


def naming_next(fact: str, next: Sequence[str]) -> str:
    """``fact``, naming the first next command unless it already does."""
    return f"{fact} (next: {next[0]})" if next and next[0] not in fact else fact


class ReviewRefused(Refused):
    """The operation is not legal here; nothing changed (exit 2).

    Attributes:
        next: the legal next commands at this point (templates, most useful first).
    """

    def __init__(
        self, fact: str, *, code: Code[Any] | None = None, next: Sequence[str] = ()
    ) -> None:
        self.base_fact = fact
        self.hint = next[0] if next and next[0] not in fact else None
        super().__init__(naming_next(fact, next), code=code)
        self.next = tuple(next)

    def shown(self) -> str:
        """As :meth:`FactoryError.shown`, with the next command kept whole after a capped
        fact: an instruction is never broken off where it begins."""
        return _shown_keeping_next(self, self.base_fact, self.hint)


def _shown_keeping_next(err: FactoryError, base_fact: str, hint: str | None) -> str:
    from factory.display import error_line

    if hint is None:
        return FactoryError.shown(err)
    return error_line(err.code, base_fact, err.spec.next_step, kept=f" (next: {hint})")


class ReviewInputInvalid(UsageError):
    """A reviewer, refuter, validator, policy or evidence input is malformed (exit 2).

    Malformed input changes nothing and consumes nothing.
    """


class ReviewCasConflict(Failure):
    """The lineage moved since it was read: compare-and-swap refused the write (exit 4)."""


class ReviewStoreBusy(Failure):
    """Another process holds the review store's lock (exit 4); the lock is never broken."""


class ReviewRecordCorrupt(IntegrityFailure):
    """A lineage's record (or receipt) fails validation; it is never repaired in place.

    Attributes:
        lineage_id: the lineage whose record fails, when one is named (the command line
            then names the ceremony that takes it out of the store as ``next``).
    """

    def __init__(
        self, fact: str, *, code: Code[Any] | None = None, lineage_id: str | None = None
    ) -> None:
        super().__init__(fact, code=code)
        self.lineage_id = lineage_id


class ReviewStoreInvalid(IntegrityFailure):
    """The store's own layout is not what factory made — a folder or link where its lock
    file belongs, a symbolic link where the store is (exit 4). Nothing is followed or
    written through it.

    Attributes:
        next: the commands that put the layout right (most useful first).
    """

    def __init__(
        self, fact: str, *, code: Code[Any] | None = None, next: Sequence[str] = ()
    ) -> None:
        super().__init__(naming_next(fact, next), code=code)
        self.next = tuple(next)


class ReviewCaptureFailed(Failure):
    """A lens answered but its result could not be captured; the raw payload was preserved
    as an incident artifact (exit 4)."""

    def __init__(
        self,
        fact: str,
        *,
        code: Code[Any] | None = None,
        preserved: str | None = None,
        next: Sequence[str] = (),
    ) -> None:
        self.base_fact = fact
        self.hint = next[0] if next and next[0] not in fact else None
        super().__init__(naming_next(fact, next), code=code)
        self.preserved = preserved
        self.next = tuple(next)

    def shown(self) -> str:
        """The replay or rerun command is kept whole after a capped fact."""
        return _shown_keeping_next(self, self.base_fact, self.hint)


class EvidenceRunFailed(Failure):
    """The evidence command could not serve as evidence (exit 4); nothing was recorded."""


_NEXT = "run one of the legal next commands it names"

LINEAGE_UNKNOWN = ReviewRefused.define(
    "review-lineage-unknown",
    "list lineages with 'factory review status', or run 'factory review start'",
)
LINEAGE_EXISTS = ReviewRefused.define("review-lineage-exists", "continue that lineage: " + _NEXT)
LINEAGE_AMBIGUOUS = ReviewRefused.define(
    "review-lineage-ambiguous", "pass --lineage with one of the ids it names"
)
LIVE_LINEAGE_EXISTS = ReviewRefused.define(
    "review-live-lineage-exists",
    "finish or stop that lineage (finalize --failed), or restore the candidate it reviews",
)
START_CONFLICT = ReviewRefused.define(
    "review-start-conflict", "drop --focus/--policy to resume the frozen lineage"
)
WRONG_STATE = ReviewRefused.define("review-wrong-state", _NEXT, default=True)
LENS_NOT_SELECTED = ReviewRefused.define("review-lens-not-selected", "run only the selected lenses")
LENS_HAS_RESULT = ReviewRefused.define("review-lens-has-result", "lenses never rerun: " + _NEXT)
LENS_MISSING = ReviewRefused.define(
    "review-lens-missing", "run each missing lens once, or pass its --result"
)
LENS_PRESERVED = ReviewRefused.define(
    "review-lens-preserved", "replay the preserved answer instead of paying for the lens twice"
)
REFUTER_REQUIRED = ReviewRefused.define(
    "review-refuter-required", "run the one refuter batch and pass it with --refuter"
)
RESULT_COUNT = ReviewRefused.define(
    "review-result-count", "pass one --result per selected lens, in selected order"
)
FORECAST_PENDING = ReviewRefused.define(
    "review-forecast-pending", "edit within the genesis paths, then finalize --validation"
)
FORECAST_REQUIRED = ReviewRefused.define(
    "review-forecast-required", "forecast with --correction-lines N before editing"
)
FORECAST_AFTER_EDIT = ReviewRefused.define(
    "review-forecast-after-edit",
    "undo the edit, forecast with --correction-lines N, then redo it (or finalize --failed)",
)
FIX_OUTSIDE_GENESIS = ReviewRefused.define(
    "review-fix-outside-genesis", "revert the edits outside the genesis paths, then rerun"
)
INPUT_CONFLICT = ReviewRefused.define(
    "review-input-conflict", "recorded judgement and evidence never change: " + _NEXT
)
NOTHING_APPLIES = ReviewRefused.define("review-nothing-applies", _NEXT)
CANDIDATE_CHANGED = ReviewRefused.define(
    "review-candidate-changed",
    "restore the candidate the lineage froze, or stop the lineage with finalize --failed",
)
EVIDENCE_WRONG_TREE = ReviewRefused.define(
    "review-evidence-wrong-tree", "restore the candidate this lineage reviews, then rerun"
)
BASE_REF_UNKNOWN = ReviewRefused.define(
    "review-base-ref-unknown", "fetch the ref or pass a --base-ref that names a commit"
)
UNSUPPORTED_PATH = ReviewRefused.define(
    "review-unsupported-path", "resolve the path it names, then rerun 'factory review start'"
)

INPUT_INVALID = ReviewInputInvalid.define(
    "review-input-invalid",
    "fix the input against 'factory review schema ROLE' and rerun (nothing was changed)",
    default=True,
)
VALUE_INVALID = ReviewInputInvalid.define(
    "review-value-invalid", "fix the file or value it names and rerun (nothing was changed)"
)
PRESERVED_NOT_RESULT = ReviewInputInvalid.define(
    "review-preserved-not-result",
    "replay it with 'factory review finalize --replay-preserved FILE'",
)
BINDING_MISMATCH = ReviewInputInvalid.define(
    "review-binding-mismatch", "pass results in selected-lens order, judged for this lineage"
)
FIX_DELTA_MISMATCH = ReviewInputInvalid.define(
    "review-fix-delta-mismatch", "validate the edit the checkout holds now"
)
POLICY_INVALID = ReviewInputInvalid.define(
    "review-policy-invalid", "pass a factory.review-policy/1 file with golden_globs only"
)

CAS_CONFLICT = ReviewCasConflict.define(
    "review-cas-conflict", "rerun the same command: it reloads the new revision", default=True
)
STORE_BUSY = ReviewStoreBusy.define(
    "review-store-busy",
    "wait for the holder to finish and rerun (the lock is released when it exits, never by age)",
    default=True,
)
RECORD_CORRUPT = ReviewRecordCorrupt.define(
    "review-record-corrupt",
    "do not edit it (it grants nothing); take it out of the store with the reclaim or repair "
    "ceremony named in next",
    default=True,
)
STORE_LOCK_NOT_FILE = ReviewStoreInvalid.define(
    "review-store-lock-not-file",
    "move what stands at the LOCK path out of the store (it is not factory's) and rerun: "
    "the lock file is created again",
    default=True,
)
STORE_SYMLINK = ReviewStoreInvalid.define(
    "review-store-symlink",
    "move the link aside (its target is neither read nor written) and rerun: the store is "
    "created again as a real folder",
)
LINEAGE_SYMLINK = ReviewRecordCorrupt.define(
    "review-lineage-symlink",
    "it is never followed and grants nothing; take it out of the store with the repair "
    "ceremony named in next",
)
CAPTURE_FAILED = ReviewCaptureFailed.define(
    "review-capture-failed", "follow the replay or rerun hint it gives", default=True
)
EVIDENCE_RUN_FAILED = EvidenceRunFailed.define(
    "review-evidence-run-failed", "rerun finalize once the command can run to an exit", default=True
)
EVIDENCE_TREE_CHANGED = EvidenceRunFailed.define(
    "review-evidence-tree-changed",
    "make the command leave tracked and untracked files alone, restore the candidate, rerun",
)
NOTHING_TO_REVIEW = ReviewRefused.define(
    "review-nothing-to-review",
    "review a committed change against its base: factory review start --base-ref COMMIT",
)
POLICY_MISSING = ReviewRefused.define(
    "review-policy-missing",
    "the lineage's frozen policy is gone: stop it if it is open, then start a new lineage",
)

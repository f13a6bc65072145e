"""The review state record and its invariants (SPEC R; the reference's ``CompactState``).

:class:`ReviewState` is everything a lineage knows: the frozen scope (snapshot, genesis
paths, risk, lenses, authored lines, budget, policy hash), the judgement (lens results,
admission), the correction attempts, the final evidence and, when escalated, why.
:func:`state_problems` is the one invariant check for every state; the store runs it on
every load and every write, so a record that breaks any rule fails closed.
"""

from __future__ import annotations

import functools
from typing import Final, Literal

from pydantic import Field

from factory.documents.canonical import digest_plain
from factory.models import StrictModel
from factory.review.admission import FollowUp, ReviewOutcome
from factory.review.documents import PATHS_TAG, SNAPSHOT_TAG
from factory.review.judgement import RefuterInput, RefuterResultInput
from factory.review.memo import ByIdentity
from factory.review.names import EscalationReason, LensName, StateName
from factory.review.results import Finding, LensResult, binding_digest
from factory.review.risk import Risk

STATE_SCHEMA: Final = "factory.review-state/1"
SnapshotKind = Literal["current-changes", "base-diff", "fix-diff"]


class Snapshot(StrictModel):
    """A git-derived target: base tree → candidate tree, its paths and identity."""

    kind: SnapshotKind
    base_tree: str
    candidate_tree: str
    paths: tuple[str, ...]
    paths_digest: str
    intended_untracked: tuple[str, ...]
    ledger_ids: tuple[str, ...]
    identity: str


@functools.lru_cache(maxsize=64)
def paths_digest(paths: tuple[str, ...]) -> str:
    """The digest of a sorted path list (memoised: a lineage re-checks the same 5,000-path
    tuples on every load and write)."""
    return digest_plain(PATHS_TAG, list(paths))


@functools.lru_cache(maxsize=64)
def _identity(
    kind: str,
    base: str,
    cand: str,
    digest: str,
    untracked: tuple[str, ...],
    ledger: tuple[str, ...],
) -> str:
    body = {
        "kind": kind,
        "base_tree": base,
        "candidate_tree": cand,
        "paths_digest": digest,
        "intended_untracked": list(untracked),
        "ledger_ids": list(ledger),
    }
    return digest_plain(SNAPSHOT_TAG, body)


def make_snapshot(
    kind: SnapshotKind,
    base_tree: str,
    candidate_tree: str,
    paths: tuple[str, ...],
    intended_untracked: tuple[str, ...],
    ledger_ids: tuple[str, ...] = (),
) -> Snapshot:
    """A snapshot with its digest and identity computed by code (paths sorted)."""
    paths = tuple(sorted(set(paths)))
    untracked = tuple(sorted(set(intended_untracked)))
    digest = paths_digest(paths)
    return Snapshot(
        kind=kind,
        base_tree=base_tree,
        candidate_tree=candidate_tree,
        paths=paths,
        paths_digest=digest,
        intended_untracked=untracked,
        ledger_ids=ledger_ids,
        identity=_identity(kind, base_tree, candidate_tree, digest, untracked, ledger_ids),
    )


def strictly_sorted(items: tuple[str, ...]) -> bool:
    """Whether ``items`` is sorted and unique (each item less than the next): the same
    answer as ``list(items) == sorted(set(items))`` in one pass, without sorting."""
    return all(map(str.__lt__, items, items[1:]))


#: Snapshots this process found consistent (frozen: the answer never changes; a state
#: and each successor of a finalize share their snapshots, so one check serves them all).
_CONSISTENT: ByIdentity[Snapshot, bool] = ByIdentity(16)


def snapshot_problem(s: Snapshot, what: str) -> str | None:
    """What makes ``s`` inconsistent (named ``what``), or ``None``."""
    if _CONSISTENT.get(s):
        return None
    problem = _snapshot_problem(s, what)
    if problem is None:
        _CONSISTENT.put(s, True)
    return problem


def _snapshot_problem(s: Snapshot, what: str) -> str | None:
    if not (strictly_sorted(s.paths) and strictly_sorted(s.intended_untracked)):
        return f"{what}: paths are not sorted and unique"
    if s.paths_digest != paths_digest(s.paths):
        return f"{what}: paths_digest does not match its paths"
    expected = _identity(
        s.kind, s.base_tree, s.candidate_tree, s.paths_digest, s.intended_untracked, s.ledger_ids
    )
    return None if s.identity == expected else f"{what}: identity does not match its fields"


class Check(StrictModel):
    """One validator check, bound to the fix delta it judged."""

    passed: bool
    evidence: tuple[str, ...]
    evidence_hash: str


class Attempt(StrictModel):
    """One correction attempt: measured by git, never by the caller."""

    number: int
    fix: Snapshot
    candidate: Snapshot
    proposed_lines: int
    actual_lines: int
    cumulative_lines: int
    original_criteria: Check
    correction_regression: Check
    follow_ups: tuple[FollowUp, ...]
    validation_hash: str
    outcome: Literal["passed", "failed", "zero-line", "over-budget"]


class Correction(StrictModel):
    """The pending forecast and the append-only attempts."""

    forecast: int | None
    attempts: tuple[Attempt, ...]
    cumulative_lines: int

    def failed(self) -> int:
        return sum(1 for a in self.attempts if a.outcome == "failed")


class EvidenceRun(StrictModel):
    """A command run by factory as final evidence, and the tree it ran on."""

    argv: tuple[str, ...]
    exit_code: int
    stdout_sha256: str
    stdout_bytes: int
    stdout_truncated: bool
    stderr_sha256: str
    stderr_bytes: int
    stderr_truncated: bool
    tree_before: str
    tree_after: str
    duration_ms: int


class FinalEvidence(StrictModel):
    """The final, independent evidence: arbitrary non-empty bytes, hashed by code."""

    evidence_hash: str
    sha256: str
    bytes: int
    source: Literal["file", "stdin", "run"]
    run: EvidenceRun | None
    declared_failed: bool

    def failed(self) -> bool:
        return self.declared_failed or (self.run is not None and self.run.exit_code != 0)


class Escalation(StrictModel):
    """Why the lineage stopped short of approval."""

    reason: EscalationReason
    detail: str


class Predecessor(StrictModel):
    """The lineage a recovered successor replaces (written by recovery; never rewritten)."""

    lineage_id: str
    revision: str
    disposition: Literal["scope_changed", "invalidated", "escalated"]
    reason: str
    actor: str
    #: SHA-256 of the maintainer authorization bytes (escalated recoveries; issue 13).
    authorization_sha256: str | None = None


class Invalidation(StrictModel):
    """Why a pristine reviewing lineage was invalidated (issue 13)."""

    reason: str


class ReviewState(StrictModel):
    """``factory.review-state/1`` (see the module docstring)."""

    schema_id: Literal["factory.review-state/1"] = Field(alias="schema")
    lineage_id: str
    generation: int
    predecessor: Predecessor | None
    state: StateName
    policy_hash: str
    focus: LensName
    initial_snapshot: Snapshot
    current_snapshot: Snapshot
    genesis_paths: tuple[str, ...]
    risk: Risk
    lenses: tuple[LensName, ...]
    changed_files: int
    changed_lines: int
    correction_budget: int
    lens_results: tuple[LensResult, ...]
    review: ReviewOutcome | None
    correction: Correction
    fix_delta_hash: str
    final_evidence: FinalEvidence | None
    escalation: Escalation | None
    #: Set only in the terminal ``invalidated`` state (issue 13; absent in older records).
    invalidation: Invalidation | None = None

    def findings(self) -> tuple[Finding, ...]:
        """Every finding, lens results concatenated in selected order."""
        return tuple(f for r in self.lens_results for f in r.findings)

    def missing_lenses(self) -> tuple[LensName, ...]:
        done = {r.lens for r in self.lens_results}
        return tuple(lens for lens in self.lenses if lens not in done)

    def binding(self, lens: str) -> tuple[int, str]:
        """The (1-based order, binding digest) start issued for ``lens``."""
        order = self.lenses.index(lens) + 1
        target = self.initial_snapshot.identity
        digest = binding_digest(
            self.lineage_id, self.generation, target, lens, order, len(self.lenses)
        )
        return order, digest


def refuter_input(review: ReviewOutcome) -> RefuterInput | None:
    """The refuter batch as admission saw it (to re-derive a stored admission)."""
    if not review.refuter:
        return None
    return RefuterInput(
        results=tuple(
            RefuterResultInput(finding_id=r.finding_id, outcome=r.outcome, proof_refs=r.proof_refs)
            for r in review.refuter
        )
    )

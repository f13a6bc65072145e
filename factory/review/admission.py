"""Causal admission: which findings may force a correction (SPEC R; the reference's matrix).

Pure. Only a severe finding (BLOCKER, CRITICAL) that the candidate *caused* can enter the
fix set, and only with evidence that survives:

=====================================================  ==========================
finding                                                outcome
=====================================================  ==========================
WARNING, SUGGESTION                                    ``info``
severe, ``insufficient`` evidence                      ``inconclusive`` → escalate
severe, ``pre-existing`` or ``base-only``              ``info`` + a follow-up with proof
severe, ``unknown`` causality                          ``inconclusive`` → escalate
severe, candidate-causal, ``deterministic``            ``corroborated`` → fix
severe, candidate-causal, ``inferential``              the one refuter batch decides:
                                                       corroborated → fix, refuted →
                                                       dropped (outcome kept),
                                                       inconclusive → escalate
=====================================================  ==========================

Candidate-causal means ``introduced``, ``behavior-activated`` or ``worsened`` *and* a
location ``path:line`` (positive decimal line) whose path is one of the genesis paths; any
other location turns the disposition into ``unknown`` — a finding about a file the
candidate never touched cannot be the candidate's to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from factory.documents.canonical import digest_plain
from factory.models import StrictModel
from factory.review.documents import REFUTER_TAG
from factory.review.errors import ReviewInputInvalid
from factory.review.judgement import RefuterInput
from factory.review.names import (
    CANDIDATE_CAUSAL,
    SEVERE,
    Causality,
    EvidenceClass,
    Outcome,
    RefuterOutcome,
    StateName,
)
from factory.review.results import Finding

_LINE = re.compile(r"^[1-9][0-9]{0,8}$")


class Classification(StrictModel):
    """How a severe finding was admitted (``causal_disposition`` is the effective one)."""

    finding_id: str
    evidence_class: EvidenceClass
    declared_disposition: Causality
    causal_disposition: Causality
    location_admitted: bool


class OutcomeEntry(StrictModel):
    """Every finding's outcome, in finding order."""

    finding_id: str
    outcome: Outcome


class RefuterRecord(StrictModel):
    """The refuter's verdict on one finding, with its proof."""

    finding_id: str
    outcome: RefuterOutcome
    proof_refs: tuple[str, ...]


class FollowUp(StrictModel):
    """A non-blocking observation kept with its proof (never a correction)."""

    source: Literal["admission", "validator"]
    finding_id: str | None
    observation: str
    proof_refs: tuple[str, ...]


class ReviewOutcome(StrictModel):
    """What admission decided, frozen with the lens results it was derived from."""

    classifications: tuple[Classification, ...]
    outcomes: tuple[OutcomeEntry, ...]
    refuter: tuple[RefuterRecord, ...]
    refuter_hash: str | None
    fix_finding_ids: tuple[str, ...]
    follow_ups: tuple[FollowUp, ...]

    def inconclusive(self) -> tuple[str, ...]:
        return tuple(o.finding_id for o in self.outcomes if o.outcome == "inconclusive")

    def route(self) -> StateName:
        """escalated if anything is inconclusive, else correction_required or validating."""
        if self.inconclusive():
            return "escalated"
        return "correction_required" if self.fix_finding_ids else "validating"


@dataclass(frozen=True, slots=True)
class NeedsRefuter:
    """Admission cannot finish: these inferential candidate-causal findings need the
    one refuter batch first."""

    finding_ids: tuple[str, ...]


def location_inside(location: str, genesis: frozenset[str]) -> bool:
    """Whether ``location`` is ``path:line`` with ``path`` one of the genesis paths."""
    path, sep, line = location.rpartition(":")
    return bool(sep) and bool(_LINE.fullmatch(line)) and path in genesis


def _effective(f: Finding, genesis: frozenset[str]) -> tuple[Causality, bool]:
    """A severe finding's effective causal disposition and whether its location is inside
    the genesis paths (candidate-causal outside them counts as ``unknown``)."""
    assert f.evidence_class is not None and f.causal_disposition is not None
    admitted = location_inside(f.location, genesis)
    effective: Causality = f.causal_disposition
    if effective in CANDIDATE_CAUSAL and not admitted:
        effective = "unknown"
    return effective, admitted


def _to_refuter(f: Finding, effective: Causality) -> bool:
    return effective in CANDIDATE_CAUSAL and f.evidence_class == "inferential"


def needs_refuter(findings: tuple[Finding, ...], genesis: frozenset[str]) -> tuple[str, ...]:
    """Ids of the severe, admitted candidate-causal, inferential findings."""
    return tuple(
        f.id for f in findings if f.severity in SEVERE and _to_refuter(f, _effective(f, genesis)[0])
    )


def _refuter_map(
    refuter: RefuterInput | None, pending: tuple[str, ...]
) -> dict[str, RefuterRecord]:
    if refuter is None:
        return {}
    ids = [r.finding_id for r in refuter.results]
    if len(set(ids)) != len(ids):
        raise ReviewInputInvalid("the refuter names a finding more than once")
    extra = sorted(set(ids) - set(pending))
    if extra:
        raise ReviewInputInvalid(
            f"the refuter names {', '.join(extra)}, which admission did not send to it "
            f"(it needs exactly: {', '.join(pending) or 'none'})"
        )
    missing = [i for i in pending if i not in ids]
    if missing:
        raise ReviewInputInvalid(
            f"the refuter gives no outcome for {', '.join(missing)} (one batch covers every "
            "finding sent to it)"
        )
    return {
        r.finding_id: RefuterRecord(
            finding_id=r.finding_id,
            outcome=r.outcome,
            proof_refs=tuple(sorted({p.strip() for p in r.proof_refs})),
        )
        for r in refuter.results
    }


#: The fields of each admission part in the order :func:`_derive` yields its rows (a test
#: checks they are every field of the model, so comparing rows is comparing models).
CLASSIFICATION_FIELDS = (
    "finding_id",
    "evidence_class",
    "declared_disposition",
    "causal_disposition",
    "location_admitted",
)
OUTCOME_FIELDS = ("finding_id", "outcome")
FOLLOW_UP_FIELDS = ("source", "finding_id", "observation", "proof_refs")
_ClassRow = tuple[str, EvidenceClass, Causality, Causality, bool]
_FollowRow = tuple[Literal["admission"], str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _Derived:
    """What admission decides, as plain rows (see the ``*_FIELDS`` orders)."""

    classes: list[_ClassRow]
    outcomes: list[tuple[str, Outcome]]
    records: tuple[RefuterRecord, ...]
    fix: tuple[str, ...]
    follow: list[_FollowRow]

    def refuter_hash(self) -> str | None:
        if not self.records:
            return None
        return digest_plain(REFUTER_TAG, [r.to_json_value() for r in self.records])


def _derive(
    findings: tuple[Finding, ...], genesis: tuple[str, ...], refuter: RefuterInput | None
) -> _Derived | NeedsRefuter:
    """The admission matrix (see the module docstring) over plain values."""
    paths = frozenset(genesis)
    effects = [_effective(f, paths) if f.severity in SEVERE else None for f in findings]
    pairs = list(zip(findings, effects, strict=True))
    pending = tuple(f.id for f, e in pairs if e is not None and _to_refuter(f, e[0]))
    if pending and refuter is None:
        return NeedsRefuter(pending)
    verdicts = _refuter_map(refuter, pending)
    classes: list[_ClassRow] = []
    outcomes: list[tuple[str, Outcome]] = []
    fix: list[str] = []
    follow: list[_FollowRow] = []
    for f, e in pairs:
        outcome: Outcome = "info"
        if e is not None:
            assert f.evidence_class is not None and f.causal_disposition is not None
            effective, admitted = e
            classes.append((f.id, f.evidence_class, f.causal_disposition, effective, admitted))
            if f.evidence_class == "insufficient" or effective == "unknown":
                outcome = "inconclusive"
            elif effective in ("pre-existing", "base-only"):
                follow.append(("admission", f.id, f.claim, f.proof_refs))
            elif f.evidence_class == "deterministic":
                outcome = "corroborated"
            else:
                outcome = verdicts[f.id].outcome
            if outcome == "corroborated":
                fix.append(f.id)
        outcomes.append((f.id, outcome))
    return _Derived(classes, outcomes, tuple(verdicts[i] for i in pending), tuple(fix), follow)


def admit(
    findings: tuple[Finding, ...], genesis: tuple[str, ...], refuter: RefuterInput | None
) -> ReviewOutcome | NeedsRefuter:
    """Apply the admission matrix (see the module docstring).

    Raises:
        ReviewInputInvalid: the refuter batch names other findings than the pending ones.
    """
    d = _derive(findings, genesis, refuter)
    if isinstance(d, NeedsRefuter):
        return d
    return ReviewOutcome(
        classifications=tuple(
            Classification(
                finding_id=i,
                evidence_class=ev,
                declared_disposition=declared,
                causal_disposition=effective,
                location_admitted=admitted,
            )
            for i, ev, declared, effective, admitted in d.classes
        ),
        outcomes=tuple(OutcomeEntry(finding_id=i, outcome=o) for i, o in d.outcomes),
        refuter=d.records,
        refuter_hash=d.refuter_hash(),
        fix_finding_ids=d.fix,
        follow_ups=tuple(
            FollowUp(source=src, finding_id=i, observation=obs, proof_refs=proofs)
            for src, i, obs, proofs in d.follow
        ),
    )


_class_row = attrgetter(*CLASSIFICATION_FIELDS)
_outcome_row = attrgetter(*OUTCOME_FIELDS)
_follow_row = attrgetter(*FOLLOW_UP_FIELDS)


def rederives(
    review: ReviewOutcome,
    findings: tuple[Finding, ...],
    genesis: tuple[str, ...],
    refuter: RefuterInput | None,
) -> bool:
    """Whether ``review`` is exactly what :func:`admit` derives from these inputs: the
    same comparison as ``admit(...) == review``, field by field, without building the
    hundreds of models of a large review a second time (a stored record is re-checked on
    every load)."""
    try:
        d = _derive(findings, genesis, refuter)
    except ReviewInputInvalid:
        return False
    return (
        not isinstance(d, NeedsRefuter)
        and [_class_row(c) for c in review.classifications] == d.classes
        and [_outcome_row(o) for o in review.outcomes] == d.outcomes
        and review.refuter == d.records
        and review.refuter_hash == d.refuter_hash()
        and review.fix_finding_ids == d.fix
        and [_follow_row(f) for f in review.follow_ups] == d.follow
    )

"""The one invariant check of a review state (SPEC R; "every mutating method ends with
Validate()").

:func:`state_problems` returns every rule a :class:`~factory.review.state.ReviewState`
breaks (empty when it is valid): scope (snapshots re-hash, genesis = initial paths, current
paths inside genesis, lenses follow from risk and focus, the budget formula), lens results
(selected lenses only, in order, with the bindings start issued, canonical ids and hashes),
admission (re-derived from the findings and refuter outcomes), correction arithmetic
(attempts append-only, measured deltas chained tree to tree, cumulative lines, at most three
failed attempts, each check bound to its fix delta) and the terminal facts (approval needs
passing evidence; an escalation's reason must hold).
"""

from __future__ import annotations

from factory.documents.canonical import (
    canonical_bytes_plain,
    digest_plain,
    is_digest,
    tagged_sha256,
)
from factory.review.admission import FollowUp, rederives
from factory.review.documents import CHECK_TAG, EMPTY_HASH, EVIDENCE_TAG, VALIDATION_TAG
from factory.review.memo import ByIdentity
from factory.review.names import MAX_FAILED_ATTEMPTS, valid_lineage
from factory.review.results import lens_result_problem
from factory.review.risk import correction_budget, select_lenses
from factory.review.state import (
    Attempt,
    Check,
    FinalEvidence,
    ReviewState,
    refuter_input,
    snapshot_problem,
)


def check_hash(name: str, passed: bool, evidence: tuple[str, ...], fix_delta: str) -> str:
    """A validator check's hash, bound to the fix delta it judged."""
    body = {
        "check": name,
        "passed": passed,
        "evidence": list(evidence),
        "fix_delta_hash": fix_delta,
    }
    return digest_plain(CHECK_TAG, body)


def validation_hash(oc: Check, cr: Check, follow_ups: tuple[FollowUp, ...], fix_delta: str) -> str:
    """The hash of one whole validator answer as recorded in an attempt."""
    body = {
        "original_criteria": {"passed": oc.passed, "evidence": list(oc.evidence)},
        "correction_regression": {"passed": cr.passed, "evidence": list(cr.evidence)},
        "follow_ups": [f.to_json_value() for f in follow_ups],
        "fix_delta_hash": fix_delta,
    }
    return digest_plain(VALIDATION_TAG, body)


def run_evidence_bytes(fe: FinalEvidence) -> bytes | None:
    """The canonical bytes an evidence run is hashed as (None for file/stdin evidence)."""
    return canonical_bytes_plain(fe.run.to_json_value()) if fe.run is not None else None


def _scope_problems(s: ReviewState) -> list[str]:
    out = []
    if not valid_lineage(s.lineage_id):
        out.append("lineage_id is not a lower-case kebab id of at most 128 bytes")
    if s.generation < 1 or (s.generation == 1) != (s.predecessor is None):
        out.append("generation 1 has no predecessor; a later generation has one")
    if not (is_digest(s.policy_hash) and is_digest(s.fix_delta_hash)):
        out.append("policy_hash and fix_delta_hash must be sha256 digests")
    snapshots = (("initial_snapshot", s.initial_snapshot), ("current_snapshot", s.current_snapshot))
    for what, snap in snapshots:
        problem = snapshot_problem(snap, what)
        if problem:
            out.append(problem)
    if s.initial_snapshot.kind == "fix-diff" or s.current_snapshot.kind != s.initial_snapshot.kind:
        out.append("the review target is current-changes or base-diff, never a fix-diff")
    if s.genesis_paths != s.initial_snapshot.paths:
        out.append("genesis_paths are not the initial snapshot's paths")
    current = s.current_snapshot.paths
    if current != s.genesis_paths and not set(current) <= set(s.genesis_paths):
        out.append("current paths leave the genesis paths")
    if s.current_snapshot.base_tree != s.initial_snapshot.base_tree:
        out.append("the current snapshot's base is not the initial base")
    if s.lenses != select_lenses(s.risk, s.focus):
        out.append("selected lenses do not follow from the risk tier and focus")
    if s.changed_lines < 0 or s.correction_budget != correction_budget(s.changed_lines):
        out.append("correction_budget is not min(200, ceil(lines / 2)) with a floor of 2")
    if s.changed_files != len(s.genesis_paths):
        out.append("changed_files is not the number of genesis paths")
    return out


def _lens_problems(s: ReviewState) -> list[str]:
    lenses = [r.lens for r in s.lens_results]
    if len(set(lenses)) != len(lenses) or not set(lenses) <= set(s.lenses):
        return ["lens results name a lens twice or one that was not selected"]
    out = []
    if lenses != sorted(lenses, key=s.lenses.index):
        out.append("lens results are not in selected order")
    for r in s.lens_results:
        if (r.order, r.binding) != s.binding(r.lens):
            out.append(f"lens {r.lens}: order or binding is not the one start issued")
        problem = lens_result_problem(r)
        if problem:
            out.append(problem)
    return out


def _review_problems(s: ReviewState) -> list[str]:
    if s.review is None:
        abandoned = s.escalation is not None and s.escalation.reason == "declared_failed"
        if s.state in ("reviewing", "invalidated") or (s.state == "escalated" and abandoned):
            return []
        return ["a state past reviewing needs its admitted review"]
    if s.state == "reviewing":
        return ["a reviewing state has no admitted review yet"]
    if s.missing_lenses():
        return ["the review was admitted before every selected lens had a result"]
    if not rederives(s.review, s.findings(), s.genesis_paths, refuter_input(s.review)):
        return ["the admitted review does not re-derive from the findings and refuter outcomes"]
    return []


def _attempt_problems(s: ReviewState, a: Attempt, previous_tree: str, running: int) -> list[str]:
    out = []
    fix_ids = s.review.fix_finding_ids if s.review else ()
    for what, snap in ((f"attempt {a.number} fix", a.fix), (f"attempt {a.number}", a.candidate)):
        problem = snapshot_problem(snap, what)
        if problem:
            out.append(problem)
        if not set(snap.paths) <= set(s.genesis_paths):
            out.append(f"{what} touches paths outside the genesis paths")
    if a.fix.kind != "fix-diff" or a.fix.base_tree != previous_tree or a.fix.ledger_ids != fix_ids:
        out.append(f"attempt {a.number}: the fix delta does not start at the previous candidate")
    c = a.candidate
    if (c.kind, c.base_tree) != (s.initial_snapshot.kind, s.initial_snapshot.base_tree) or (
        c.candidate_tree != a.fix.candidate_tree
    ):
        out.append(f"attempt {a.number}: its candidate is not the fix delta's result")
    if a.cumulative_lines != running + a.actual_lines or min(a.actual_lines, a.proposed_lines) < 0:
        out.append(f"attempt {a.number}: cumulative lines do not add up")
    delta = a.fix.identity
    checks = (
        ("original_criteria", a.original_criteria),
        ("correction_regression", a.correction_regression),
    )
    for name, check in checks:
        if check.evidence_hash != check_hash(name, check.passed, check.evidence, delta):
            out.append(f"attempt {a.number}: {name} is not bound to its fix delta")
    if a.validation_hash != validation_hash(
        a.original_criteria, a.correction_regression, a.follow_ups, delta
    ):
        out.append(f"attempt {a.number}: validation_hash does not match the recorded checks")
    expected = "failed"
    if a.actual_lines == 0:
        expected = "zero-line"
    elif a.cumulative_lines > s.correction_budget:
        expected = "over-budget"
    elif a.original_criteria.passed and a.correction_regression.passed:
        expected = "passed"
    if a.outcome != expected:
        out.append(f"attempt {a.number}: outcome {a.outcome} should be {expected}")
    return out


def _correction_problems(s: ReviewState) -> list[str]:
    corr, out = s.correction, []
    if corr.attempts and (s.review is None or not s.review.fix_finding_ids):
        return ["correction attempts exist without corroborated findings to fix"]
    tree, running = s.initial_snapshot.candidate_tree, 0
    for i, a in enumerate(corr.attempts):
        if a.number != i + 1:
            out.append("attempts are not numbered 1, 2, …")
        out += _attempt_problems(s, a, tree, running)
        if i < len(corr.attempts) - 1 and a.outcome != "failed":
            out.append(f"attempt {a.number} ended the correction but is not the last one")
        tree, running = a.candidate.candidate_tree, a.cumulative_lines
    if corr.cumulative_lines != running:
        out.append("cumulative_lines is not the sum of the measured attempts")
    if corr.failed() > MAX_FAILED_ATTEMPTS:
        out.append("more than three failed correction attempts")
    current = corr.attempts[-1].candidate if corr.attempts else s.initial_snapshot
    if s.current_snapshot != current:
        out.append("current_snapshot is not the latest attempt's candidate")
    last = corr.attempts[-1] if corr.attempts else None
    expected_delta = last.fix.identity if last and last.outcome == "passed" else EMPTY_HASH
    if s.fix_delta_hash != expected_delta:
        out.append("fix_delta_hash is not the passing attempt's fix delta")
    pending = s.state in ("correction_required", "escalated")
    if corr.forecast is not None and (corr.forecast <= 0 or not pending):
        out.append("a forecast is positive and pending only while correction is required")
    return out


def _evidence_problems(fe: FinalEvidence) -> list[str]:
    if not (is_digest(fe.evidence_hash) and len(fe.sha256) == 64 and fe.bytes > 0):
        return ["final evidence needs a digest, a SHA-256 and at least one byte"]
    data = run_evidence_bytes(fe)
    if (fe.source == "run") != (data is not None):
        return ["final evidence from a run must carry the run, and only then"]
    if data is not None and (
        fe.evidence_hash != tagged_sha256(EVIDENCE_TAG, data) or fe.bytes != len(data)
    ):
        return ["the evidence run's hash does not match the run it records"]
    return []


def _ready_to_validate(s: ReviewState) -> bool:
    """Review admitted with nothing unresolved, and any correction passed."""
    if s.review is None or s.review.inconclusive():
        return False
    attempts = s.correction.attempts
    if not s.review.fix_finding_ids:
        return not attempts and s.correction.forecast is None
    return bool(attempts) and attempts[-1].outcome == "passed"


def _escalation_problems(s: ReviewState) -> list[str]:
    esc, corr = s.escalation, s.correction
    assert esc is not None
    last = corr.attempts[-1].outcome if corr.attempts else None
    holds = {
        "inconclusive_finding": s.review is not None and bool(s.review.inconclusive()),
        "forecast_over_budget": corr.forecast is not None
        and corr.cumulative_lines + corr.forecast > s.correction_budget
        and last in (None, "failed"),
        "correction_over_budget": last == "over-budget",
        "zero_line_attempt": last == "zero-line",
        "attempts_exhausted": last == "failed" and corr.failed() == MAX_FAILED_ATTEMPTS,
        "verification_failed": _ready_to_validate(s)
        and s.final_evidence is not None
        and s.final_evidence.failed(),
        "declared_failed": s.final_evidence is None or s.final_evidence.declared_failed,
    }[esc.reason]
    return [] if holds else [f"escalation reason {esc.reason} does not hold for this state"]


def _invalidation_problems(s: ReviewState) -> list[str]:
    """``invalidated`` ends only a pristine reviewing lineage, and records why (issue 13)."""
    if (s.state == "invalidated") != (s.invalidation is not None):
        return ["only an invalidated state records an invalidation, and it always does"]
    if s.state != "invalidated":
        return []
    assert s.invalidation is not None
    if (
        s.lens_results
        or s.review is not None
        or s.final_evidence is not None
        or (s.correction.attempts or s.correction.forecast is not None)
    ):
        return ["invalidated needs a pristine lineage (no result, finding, attempt or evidence)"]
    if not s.invalidation.reason.strip():
        return ["an invalidation records a non-empty reason"]
    return []


def _state_problems(s: ReviewState) -> list[str]:
    corr, fe = s.correction, s.final_evidence
    if s.state == "invalidated" or s.invalidation is not None:
        return _invalidation_problems(s)
    if s.state != "escalated" and s.escalation is not None:
        return ["only an escalated state records an escalation"]
    if fe is not None and s.state not in ("approved", "escalated"):
        return ["final evidence is recorded only by a terminal transition"]
    if s.state == "reviewing":
        if corr.attempts or corr.forecast is not None:
            return ["a reviewing state has no correction yet"]
    elif s.state == "correction_required":
        if s.review is None or s.review.route() != "correction_required":
            return ["correction_required needs corroborated findings and nothing inconclusive"]
        if (
            any(a.outcome != "failed" for a in corr.attempts)
            or corr.failed() >= MAX_FAILED_ATTEMPTS
        ):
            return ["correction_required allows only fewer than three failed attempts"]
        if corr.cumulative_lines + (corr.forecast or 0) > s.correction_budget:
            return ["correction_required is within its cumulative budget"]
    elif s.state in ("validating", "approved"):
        if not _ready_to_validate(s):
            return [f"{s.state} needs an admitted review and, if corrected, a passing attempt"]
        if s.state == "approved" and (fe is None or fe.failed()):
            return ["approved needs passing final evidence"]
    else:
        if s.escalation is None:
            return ["an escalated state records why"]
        return _escalation_problems(s)
    return []


#: States this process found valid (see :mod:`.memo`; an invalid one is checked each time).
_VALID: ByIdentity[ReviewState, bool] = ByIdentity(8)


def state_problems(s: ReviewState) -> list[str]:
    """Every invariant ``s`` breaks; empty when it is a valid review state."""
    if _VALID.get(s):
        return []
    out = _all_problems(s)
    if not out:
        _VALID.put(s, True)
    return out


def _all_problems(s: ReviewState) -> list[str]:
    out = _scope_problems(s) + _lens_problems(s)
    if out:
        return out
    out = _review_problems(s) + _correction_problems(s)
    if s.final_evidence is not None:
        out += _evidence_problems(s.final_evidence)
    return out or _state_problems(s)

"""The review state machine as one pure function (SPEC R).

:func:`apply` takes the current state (``None`` before start) and one operation and returns
the successor, or raises :class:`ReviewRefused` naming the legal next commands
(:func:`~factory.review.legal.next_commands`; the operations are in
:mod:`factory.review.operations`, both re-exported here). Legal edges
(:data:`~factory.review.successor.EDGES`)::

    reviewing ──complete-review──► correction_required | validating | escalated
    reviewing ──record-lens──► reviewing           (one result per selected lens, once)
    correction_required ──forecast──► correction_required (forecast pending) | escalated
    correction_required ──complete-fix──► validating | correction_required | escalated
    validating ──finish──► approved | escalated
    reviewing | correction_required | validating ──abandon (--failed)──► escalated

Every successor is checked by :func:`~factory.review.invariants.state_problems`; a
successor that breaks an invariant is a bug (``AssertionError``), never a record.
"""

from __future__ import annotations

from typing import Literal

from factory.display import inert
from factory.review.admission import FollowUp, NeedsRefuter, admit
from factory.review.documents import EMPTY_HASH
from factory.review.errors import (
    BINDING_MISMATCH,
    FIX_DELTA_MISMATCH,
    FIX_OUTSIDE_GENESIS,
    FORECAST_PENDING,
    FORECAST_REQUIRED,
    LENS_HAS_RESULT,
    LENS_MISSING,
    LENS_NOT_SELECTED,
    LINEAGE_EXISTS,
    LINEAGE_UNKNOWN,
    REFUTER_REQUIRED,
    VALUE_INVALID,
    WRONG_STATE,
    ReviewInputInvalid,
)
from factory.review.gate_errors import NOT_PRISTINE
from factory.review.invariants import check_hash, state_problems, validation_hash
from factory.review.judgement import CheckInput
from factory.review.legal import (
    admit_pending,
    next_commands,
    pristine,
    refuse,
)
from factory.review.names import MAX_FAILED_ATTEMPTS, EscalationReason, StateName
from factory.review.operations import (
    OPERATION_NAMES,
    Abandon,
    CompleteFix,
    CompleteReview,
    Create,
    Finish,
    Forecast,
    Invalidate,
    Operation,
    RecordLens,
)
from factory.review.risk import correction_budget, select_lenses
from factory.review.state import (
    STATE_SCHEMA,
    Attempt,
    Check,
    Correction,
    Escalation,
    Invalidation,
    ReviewState,
)
from factory.review.successor import EDGES

__all__ = [
    "OPERATION_NAMES",
    "Abandon",
    "CompleteFix",
    "CompleteReview",
    "Create",
    "Finish",
    "Forecast",
    "Invalidate",
    "Operation",
    "RecordLens",
    "admit_pending",
    "apply",
    "next_commands",
    "pristine",
    "refuse",
]


def _require(state: ReviewState | None, *allowed: StateName, op: str) -> ReviewState:
    if state is None:
        raise refuse(None, f"there is no review lineage to {op}", LINEAGE_UNKNOWN)
    if state.state not in allowed:
        raise refuse(
            state,
            f"lineage {state.lineage_id} is {state.state}; {op} applies only in "
            f"{' or '.join(allowed)}",
            WRONG_STATE,
        )
    return state


def _checked(prev: ReviewState | None, new: ReviewState) -> ReviewState:
    problems = state_problems(new)
    if problems:
        raise AssertionError(f"transition produced an invalid state: {problems[0]}")
    if prev is not None and (prev.state, new.state) not in EDGES:
        raise AssertionError(f"illegal edge {prev.state} -> {new.state}")
    return new


def _create(state: ReviewState | None, op: Create) -> ReviewState:
    if state is not None:
        raise refuse(state, f"lineage {state.lineage_id} already exists", LINEAGE_EXISTS)
    return ReviewState(
        schema_id=STATE_SCHEMA,
        lineage_id=op.lineage_id,
        generation=op.generation,
        predecessor=op.predecessor,
        state="reviewing",
        policy_hash=op.policy_hash,
        focus=op.focus,
        initial_snapshot=op.snapshot,
        current_snapshot=op.snapshot,
        genesis_paths=op.snapshot.paths,
        risk=op.risk,
        lenses=select_lenses(op.risk, op.focus),
        changed_files=len(op.snapshot.paths),
        changed_lines=op.changed_lines,
        correction_budget=correction_budget(op.changed_lines),
        lens_results=(),
        review=None,
        correction=Correction(forecast=None, attempts=(), cumulative_lines=0),
        fix_delta_hash=EMPTY_HASH,
        final_evidence=None,
        escalation=None,
    )


def _record_lens(state: ReviewState | None, op: RecordLens) -> ReviewState:
    s = _require(state, "reviewing", op="record a lens result")
    r = op.result
    if r.lens not in s.lenses:
        raise refuse(
            s,
            f"lens {r.lens} was not selected for {s.lineage_id} (selected: "
            f"{', '.join(s.lenses) or 'none'})",
            LENS_NOT_SELECTED,
        )
    existing = next((x for x in s.lens_results if x.lens == r.lens), None)
    if existing is not None:
        if existing.result_hash == r.result_hash:
            return s
        raise refuse(s, f"lens {r.lens} already has a result", LENS_HAS_RESULT)
    if (r.order, r.binding) != s.binding(r.lens):
        raise BINDING_MISMATCH(
            f"the result for lens {r.lens} is not bound to lineage {s.lineage_id}'s target"
        )
    results = sorted((*s.lens_results, r), key=lambda x: s.lenses.index(x.lens))
    return s.model_copy(update={"lens_results": tuple(results)})


def _complete_review(state: ReviewState | None, op: CompleteReview) -> ReviewState:
    s = _require(state, "reviewing", op="complete the review")
    missing = s.missing_lenses()
    if missing:
        raise refuse(
            s,
            f"lens results are missing for {', '.join(missing)}",
            LENS_MISSING,
        )
    outcome = admit(s.findings(), s.genesis_paths, op.refuter)
    if isinstance(outcome, NeedsRefuter):
        raise refuse(
            s,
            f"inferential candidate-caused findings {', '.join(outcome.finding_ids)} need the "
            "refuter's outcomes",
            REFUTER_REQUIRED,
        )
    route = outcome.route()
    escalation = None
    if route == "escalated":
        escalation = Escalation(
            reason="inconclusive_finding",
            detail=f"inconclusive: {', '.join(outcome.inconclusive())}",
        )
    return s.model_copy(update={"review": outcome, "state": route, "escalation": escalation})


def _forecast(state: ReviewState | None, op: Forecast) -> ReviewState:
    s = _require(state, "correction_required", op="take a correction forecast")
    corr = s.correction
    if op.lines <= 0:
        raise VALUE_INVALID("--correction-lines must be a positive number of lines")
    if corr.forecast is not None:
        if corr.forecast == op.lines:
            return s
        raise refuse(
            s,
            f"a forecast of {corr.forecast} lines is already pending",
            FORECAST_PENDING,
        )
    new_corr = corr.model_copy(update={"forecast": op.lines})
    if corr.cumulative_lines + op.lines <= s.correction_budget:
        return s.model_copy(update={"correction": new_corr})
    escalation = Escalation(
        reason="forecast_over_budget",
        detail=f"{corr.cumulative_lines} spent + {op.lines} forecast > budget "
        f"{s.correction_budget}",
    )
    return s.model_copy(
        update={"correction": new_corr, "state": "escalated", "escalation": escalation}
    )


def _fix_scope(s: ReviewState, op: CompleteFix) -> None:
    assert s.review is not None
    fix, cand = op.fix, op.candidate
    if (
        fix.kind != "fix-diff"
        or fix.base_tree != s.current_snapshot.candidate_tree
        or fix.ledger_ids != s.review.fix_finding_ids
        or (cand.kind, cand.base_tree) != (s.initial_snapshot.kind, s.initial_snapshot.base_tree)
        or cand.candidate_tree != fix.candidate_tree
    ):
        raise AssertionError("the fix snapshot was not derived from this lineage's candidate")
    outside = sorted((set(fix.paths) | set(cand.paths)) - set(s.genesis_paths))
    if outside:
        raise refuse(
            s,
            f"the correction touches {len(outside)} path(s) outside the genesis paths (first: "
            f"{inert(outside[0])})",
            FIX_OUTSIDE_GENESIS,
        )
    claimed = op.validation.fix_delta_hash
    if claimed is not None and claimed != fix.identity:
        raise FIX_DELTA_MISMATCH("the validation names another fix delta than the one measured now")


def _check(name: str, given: CheckInput, delta: str) -> Check:
    evidence = tuple(sorted(set(given.evidence)))
    digest = check_hash(name, given.passed, evidence, delta)
    return Check(passed=given.passed, evidence=evidence, evidence_hash=digest)


def _attempt(s: ReviewState, op: CompleteFix) -> Attempt:
    v, delta, corr = op.validation, op.fix.identity, s.correction
    assert corr.forecast is not None
    oc = _check("original_criteria", v.original_criteria, delta)
    cr = _check("correction_regression", v.correction_regression, delta)
    follow = tuple(
        FollowUp(
            source="validator",
            finding_id=None,
            observation=f.observation,
            proof_refs=tuple(sorted(set(f.proof_refs))),
        )
        for f in v.follow_ups
    )
    cumulative = corr.cumulative_lines + op.actual_lines
    outcome: Literal["passed", "failed", "zero-line", "over-budget"] = "failed"
    if op.actual_lines == 0:
        outcome = "zero-line"
    elif cumulative > s.correction_budget:
        outcome = "over-budget"
    elif oc.passed and cr.passed:
        outcome = "passed"
    return Attempt(
        number=len(corr.attempts) + 1,
        fix=op.fix,
        candidate=op.candidate,
        proposed_lines=corr.forecast,
        actual_lines=op.actual_lines,
        cumulative_lines=cumulative,
        original_criteria=oc,
        correction_regression=cr,
        follow_ups=follow,
        validation_hash=validation_hash(oc, cr, follow, delta),
        outcome=outcome,
    )


_ESCALATE_ON: dict[str, tuple[EscalationReason, str]] = {
    "zero-line": ("zero_line_attempt", "the attempt changed no authored line"),
    "over-budget": ("correction_over_budget", "the measured lines exceed the budget"),
}


def _complete_fix(state: ReviewState | None, op: CompleteFix) -> ReviewState:
    s = _require(state, "correction_required", op="validate a correction")
    if s.correction.forecast is None:
        raise refuse(
            s,
            "no correction forecast is pending",
            FORECAST_REQUIRED,
        )
    _fix_scope(s, op)
    a = _attempt(s, op)
    attempts = (*s.correction.attempts, a)
    corr = Correction(forecast=None, attempts=attempts, cumulative_lines=a.cumulative_lines)
    update: dict[str, object] = {"correction": corr, "current_snapshot": op.candidate}
    if a.outcome == "passed":
        update.update(state="validating", fix_delta_hash=a.fix.identity)
    elif a.outcome in _ESCALATE_ON:
        reason, detail = _ESCALATE_ON[a.outcome]
        update.update(state="escalated", escalation=Escalation(reason=reason, detail=detail))
    elif corr.failed() >= MAX_FAILED_ATTEMPTS:
        detail = f"{MAX_FAILED_ATTEMPTS} failed correction attempts"
        escalation = Escalation(reason="attempts_exhausted", detail=detail)
        update.update(state="escalated", escalation=escalation)
    return s.model_copy(update=update)


def _finish(state: ReviewState | None, op: Finish) -> ReviewState:
    s = _require(state, "validating", op="record final evidence")
    if not op.evidence.failed():
        return s.model_copy(update={"state": "approved", "final_evidence": op.evidence})
    why = "declared failed" if op.evidence.declared_failed else "the evidence run exited non-zero"
    escalation = Escalation(reason="verification_failed", detail=f"final verification {why}")
    return s.model_copy(
        update={"state": "escalated", "final_evidence": op.evidence, "escalation": escalation}
    )


def _invalidate(state: ReviewState | None, op: Invalidate) -> ReviewState:
    s = _require(state, "reviewing", op="invalidate")
    if not pristine(s):
        raise refuse(
            s,
            f"lineage {s.lineage_id} already recorded judgement; invalidate applies only to a "
            "pristine reviewing lineage",
            NOT_PRISTINE,
        )
    if not op.reason.strip():
        raise ReviewInputInvalid("--reason must not be empty")
    return s.model_copy(
        update={"state": "invalidated", "invalidation": Invalidation(reason=op.reason)}
    )


def _abandon(state: ReviewState | None, op: Abandon) -> ReviewState:
    if state is not None and state.state == "validating" and op.evidence is not None:
        return _finish(state, Finish(op.evidence))
    s = _require(state, "reviewing", "correction_required", "validating", op="stop with --failed")
    detail = f"declared failed while {s.state}"
    escalation = Escalation(reason="declared_failed", detail=detail)
    corr = s.correction.model_copy(update={"forecast": None})
    return s.model_copy(
        update={
            "state": "escalated",
            "escalation": escalation,
            "final_evidence": op.evidence,
            "correction": corr,
        }
    )


def apply(state: ReviewState | None, op: Operation) -> ReviewState:
    """The successor of ``state`` under ``op``.

    Raises:
        ReviewRefused: the operation is not legal here (names the next legal commands).
        ReviewInputInvalid: the operation's input does not fit this lineage.
    """
    handlers = {
        Create: _create,
        RecordLens: _record_lens,
        CompleteReview: _complete_review,
        Forecast: _forecast,
        CompleteFix: _complete_fix,
        Finish: _finish,
        Abandon: _abandon,
        Invalidate: _invalidate,
    }
    new: ReviewState = handlers[type(op)](state, op)  # type: ignore[operator]
    if new is state:
        return new
    return _checked(state, new)

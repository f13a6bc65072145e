"""The review state machine as one pure function (SPEC R).

:func:`apply` takes the current state (``None`` before start) and one operation and returns
the successor, or raises :class:`ReviewRefused` naming the legal next commands
(:func:`next_commands`). Legal edges (:data:`~factory.review.successor.EDGES`)::

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

from dataclasses import dataclass
from typing import Literal

from factory.display import inert
from factory.errors import Code
from factory.review import nextcmd
from factory.review.admission import FollowUp, NeedsRefuter, admit
from factory.review.canon import EMPTY_HASH, STATE_TAG, digest_of
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
    ReviewRefused,
)
from factory.review.gate_errors import NOT_PRISTINE
from factory.review.invariants import check_hash, state_problems, validation_hash
from factory.review.judgement import CheckInput, RefuterInput, ValidatorInput
from factory.review.names import MAX_FAILED_ATTEMPTS, EscalationReason, LensName, StateName
from factory.review.results import LensResult
from factory.review.risk import Risk, correction_budget, select_lenses
from factory.review.state import (
    STATE_SCHEMA,
    Attempt,
    Check,
    Correction,
    Escalation,
    FinalEvidence,
    Invalidation,
    Predecessor,
    ReviewState,
    Snapshot,
)
from factory.review.successor import EDGES


@dataclass(frozen=True, slots=True)
class Create:
    """``review start``: a new lineage in ``reviewing``."""

    lineage_id: str
    policy_hash: str
    focus: LensName
    snapshot: Snapshot
    risk: Risk
    changed_lines: int
    #: A recovered successor (issue 13): generation + 1 and the predecessor it replaces.
    generation: int = 1
    predecessor: Predecessor | None = None


@dataclass(frozen=True, slots=True)
class Invalidate:
    """``review invalidate``: a pristine reviewing lineage ends invalidated (issue 13)."""

    reason: str


@dataclass(frozen=True, slots=True)
class RecordLens:
    """Capture one selected lens's result (from a lens run, a file or a replay)."""

    result: LensResult


@dataclass(frozen=True, slots=True)
class CompleteReview:
    """Admit the findings of all lens results (with the one refuter batch, if needed)."""

    refuter: RefuterInput | None


@dataclass(frozen=True, slots=True)
class Forecast:
    """``--correction-lines N``: the size of the correction, before editing."""

    lines: int


@dataclass(frozen=True, slots=True)
class CompleteFix:
    """``--validation``: the measured fix delta and the targeted validator's checks."""

    fix: Snapshot
    candidate: Snapshot
    actual_lines: int
    validation: ValidatorInput


@dataclass(frozen=True, slots=True)
class Finish:
    """``--evidence`` / ``--evidence-run`` (or ``--failed``) in ``validating``."""

    evidence: FinalEvidence


@dataclass(frozen=True, slots=True)
class Abandon:
    """``--failed`` before validating: stop the lineage as escalated."""

    evidence: FinalEvidence | None


Operation = (
    Create | RecordLens | CompleteReview | Forecast | CompleteFix | Finish | Abandon | Invalidate
)
OPERATION_NAMES: dict[type, str] = {
    Invalidate: "invalidate",
    Create: "start",
    RecordLens: "record-lens",
    CompleteReview: "complete-review",
    Forecast: "forecast",
    CompleteFix: "complete-fix",
    Finish: "finish",
    Abandon: "abandon",
}


def _cmd(state: ReviewState, rest: str) -> str:
    return f"factory review finalize --lineage {state.lineage_id} {rest}"


def next_commands(state: ReviewState | None) -> tuple[str, ...]:
    """The legal next commands for ``state`` (templates; most useful first)."""
    if state is None:
        return ("factory review start",)
    lid, failed = state.lineage_id, _cmd(state, "--failed")
    evidence = (_cmd(state, "--evidence FILE"), _cmd(state, "--evidence-run -- CMD…"))
    if state.state == "reviewing":
        missing = state.missing_lenses()
        if missing:
            names = " ".join(missing)
            runs = tuple(f"factory review lens --lineage {lid} --lens {lens}" for lens in missing)
            runs = (*runs, _cmd(state, f"--result FILE… (one per lens, in order: {names})"))
            extra = (nextcmd.invalidate(lid, _revision(state)),) if pristine(state) else ()
            return (*runs, failed, *extra)
        pending = admit_pending(state)
        if pending:
            return (_cmd(state, f"--refuter FILE (outcomes for {', '.join(pending)})"), failed)
        return (_cmd(state, "[--evidence FILE]"), failed)
    if state.state == "correction_required":
        if state.correction.forecast is None:
            return (_cmd(state, "--correction-lines N"), failed)
        return (_cmd(state, "--validation FILE (after editing within the genesis paths)"), failed)
    if state.state == "validating":
        return (*evidence, failed)
    return _terminal_commands(state)


def _revision(state: ReviewState) -> str:
    return digest_of(STATE_TAG, state.to_json_value())


def pristine(state: ReviewState) -> bool:
    """Nothing judged, corrected or evidenced yet: the only state invalidate applies to."""
    c = state.correction
    return state.state == "reviewing" and not (
        state.lens_results or state.review or c.attempts or c.forecast or state.final_evidence
    )


def _terminal_commands(state: ReviewState) -> tuple[str, ...]:
    """Terminal states (issue 13): gates for an approval, recovery for the others."""
    lid, show = state.lineage_id, nextcmd.show(state.lineage_id)
    if state.state == "approved":
        return (*(nextcmd.validate(g) for g in nextcmd.GATE_ORDER), show)
    if state.state == "invalidated":
        return (nextcmd.recover(lid, _revision(state), "invalidated"), show)
    return (
        nextcmd.recover(lid, _revision(state), "escalated"),
        show,
        "factory review start (after changing the candidate: a new lineage)",
    )


def admit_pending(state: ReviewState) -> tuple[str, ...]:
    """Finding ids that still need the refuter before admission can finish."""
    result = admit(state.findings(), state.genesis_paths, None)
    return result.finding_ids if isinstance(result, NeedsRefuter) else ()


def refuse(state: ReviewState | None, message: str, code: Code[ReviewRefused]) -> ReviewRefused:
    """A refusal that names the legal next commands of ``state``."""
    return ReviewRefused(message, code=code, next=next_commands(state))


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
        raise ReviewInputInvalid(
            f"the result for lens {r.lens} is not bound to lineage {s.lineage_id}'s target",
            code=BINDING_MISMATCH,
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
        raise ReviewInputInvalid(
            "--correction-lines must be a positive number of lines", code=VALUE_INVALID
        )
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
        raise ReviewInputInvalid(
            "the validation names another fix delta than the one measured now",
            code=FIX_DELTA_MISMATCH,
        )


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

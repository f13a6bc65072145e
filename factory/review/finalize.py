"""``factory review finalize``: one call applies every transition its inputs allow, each
persisted by compare-and-swap (SPEC R).

Every input is parsed first and the whole sequence of transitions is *simulated* on the
loaded state with the pure machine before anything is written, so malformed or
mismatched input changes nothing and consumes nothing. Then each transition is committed
in order (blobs first, then the record, expected revision = the previous one); a crash
between two commits resumes from the last one. The only effect that cannot be simulated —
``--evidence-run`` — runs last, when the committed state is ``validating``.

Retries are idempotent: an input the lineage already reflects (the same lens result, the
same refuter batch, forecast, validation or evidence) is skipped; an input that
contradicts what is recorded is refused (``review-input-conflict``), naming the next legal
commands. A terminal state (re)writes its derived receipt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.errors import ExitCode
from factory.review import machine
from factory.review.errors import (
    BINDING_MISMATCH,
    FORECAST_AFTER_EDIT,
    FORECAST_REQUIRED,
    INPUT_CONFLICT,
    NOTHING_APPLIES,
    RESULT_COUNT,
    ReviewCasConflict,
    ReviewRefused,
)
from factory.review.finalize_inputs import FinalizeArgs, Inputs, parse_args
from factory.review.judgement import (
    ReviewerInput,
    ValidatorInput,
)
from factory.review.names import LENS_ROLE_PREFIX, RECEIPTED, TERMINAL, LensName
from factory.review.results import LensResult, LensSource, build_lens_result
from factory.review.service import Context, lineage_policy, resolve_lineage
from factory.review.state import ReviewState
from factory.review.store import Loaded, revision_of
from factory.review.views import finalize_view

EVIDENCE_ROLE = "final-evidence"

__all__ = ["FinalizeArgs", "commit", "finalize", "plan_hook"]


def _no_hook() -> None:
    return None


#: Race-test seam: called after the transitions are simulated, before the first commit.
plan_hook: Callable[[], None] = _no_hook


@dataclass
class Plan:
    """The simulated transitions: each op with the blobs to store before committing it."""

    state: ReviewState
    steps: list[tuple[str, ReviewState, dict[str, bytes]]] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

    def apply(
        self, name: str, op: machine.Operation, blobs: dict[str, bytes] | None = None
    ) -> None:
        new = machine.apply(self.state, op)
        if new is not self.state:
            self.steps.append((name, new, blobs or {}))
            self.state = new

    def conflict(self, what: str) -> ReviewRefused:
        return ReviewRefused(
            f"{what} differs from what lineage {self.state.lineage_id} already recorded; "
            "recorded judgement and evidence never change",
            code=INPUT_CONFLICT,
            next=machine.next_commands(self.state),
        )


def _source(kind: str, raw: bytes) -> LensSource:
    return LensSource(
        kind=kind,  # type: ignore[arg-type]
        raw_sha256=sha256_hex(raw),
        raw_bytes=len(raw),
        route=None,
        cli_version=None,
    )


def _record(plan: Plan, lens: LensName, raw: bytes, reviewer: ReviewerInput, kind: str) -> None:
    s = plan.state
    order, binding = s.binding(lens)
    result = build_lens_result(
        reviewer, lens=lens, order=order, binding=binding, source=_source(kind, raw)
    )
    recorded: LensResult | None = next((r for r in s.lens_results if r.lens == lens), None)
    if recorded is not None:
        if recorded.result_hash != result.result_hash:
            raise plan.conflict(f"the result for lens {lens}")
        return
    plan.apply("record-lens", machine.RecordLens(result), {LENS_ROLE_PREFIX + lens: raw})


def stage_replay(plan: Plan, inputs: Inputs) -> None:
    if inputs.replay is None:
        return
    lens, payload, reviewer, lineage_id = inputs.replay
    s = plan.state
    if lineage_id != s.lineage_id or lens not in s.lenses:
        raise BINDING_MISMATCH(
            f"the preserved artifact belongs to lineage {lineage_id} lens {lens}, not to "
            f"{s.lineage_id}"
        )
    _record(plan, lens, payload, reviewer, "replayed-incident")
    plan.consumed.append("--replay-preserved")


def stage_results(plan: Plan, inputs: Inputs) -> None:
    if not inputs.results:
        return
    s = plan.state
    if len(inputs.results) == len(s.lenses):
        lenses: tuple[LensName, ...] = s.lenses
    elif len(inputs.results) == len(s.missing_lenses()):
        lenses = s.missing_lenses()
    else:
        raise ReviewRefused(
            f"{len(inputs.results)} --result file(s) for {len(s.lenses)} selected lens(es) "
            f"({', '.join(s.lenses) or 'none'}; still missing: "
            f"{', '.join(s.missing_lenses()) or 'none'})",
            code=RESULT_COUNT,
            next=machine.next_commands(s),
        )
    for lens, (raw, reviewer) in zip(lenses, inputs.results, strict=True):
        _record(plan, lens, raw, reviewer, "result-file")
    plan.consumed.append("--result")


def stage_review(plan: Plan, inputs: Inputs) -> None:
    s = plan.state
    if s.state == "reviewing" and not s.missing_lenses():
        if inputs.refuter is None and machine.admit_pending(s):
            return
        plan.apply("complete-review", machine.CompleteReview(inputs.refuter))
        if inputs.refuter is not None:
            plan.consumed.append("--refuter")
        return
    if inputs.refuter is None:
        return
    if s.review is None:
        plan.unused.append("--refuter")
        return
    given = {
        (r.finding_id, r.outcome, tuple(sorted({p.strip() for p in r.proof_refs})))
        for r in inputs.refuter.results
    }
    if given != {(r.finding_id, r.outcome, r.proof_refs) for r in s.review.refuter}:
        raise plan.conflict("the refuter batch")
    plan.consumed.append("--refuter")


def _check_not_edited(ctx: Context, loaded: Loaded, s: ReviewState) -> None:
    """A new forecast is taken *before* editing: the checkout must still hold the
    lineage's current candidate (else the forecast would be a narration of the edit)."""
    from factory.review.snapshot import live_target  # git: only when forecasting

    policy = lineage_policy(ctx, loaded)
    first = s.initial_snapshot
    live = live_target(ctx.wt, first.kind, first.base_tree, policy).snapshot.candidate_tree
    if live != s.current_snapshot.candidate_tree:
        raise machine.refuse(
            s,
            f"the checkout already differs from the candidate {s.current_snapshot.candidate_tree}"
            f" (now {live}): a forecast is given before editing, so undo the edit, forecast, "
            "then redo it — or stop the lineage",
            FORECAST_AFTER_EDIT,
        )


def stage_forecast(plan: Plan, ctx: Context, loaded: Loaded, lines: int | None) -> None:
    if lines is None:
        return
    s, corr = plan.state, plan.state.correction
    if s.state == "correction_required":
        if corr.forecast is None and lines > 0:
            _check_not_edited(ctx, loaded, s)
        plan.apply("forecast", machine.Forecast(lines))
        plan.consumed.append("--correction-lines")
        return
    last = corr.attempts[-1] if corr.attempts else None
    if (s.state == "escalated" and corr.forecast == lines) or (
        last is not None and last.proposed_lines == lines
    ):
        plan.consumed.append("--correction-lines")  # already recorded: an identical retry
        return
    plan.unused.append("--correction-lines")


def _same_validation(state: ReviewState, v: ValidatorInput) -> bool:
    attempts = state.correction.attempts
    if not attempts:
        return False
    a = attempts[-1]
    return (
        (a.original_criteria.passed, a.original_criteria.evidence)
        == (v.original_criteria.passed, tuple(sorted(set(v.original_criteria.evidence))))
        and (a.correction_regression.passed, a.correction_regression.evidence)
        == (v.correction_regression.passed, tuple(sorted(set(v.correction_regression.evidence))))
        and [f.observation for f in a.follow_ups] == [f.observation for f in v.follow_ups]
    )


def stage_fix(plan: Plan, ctx: Context, loaded: Loaded, inputs: Inputs) -> None:
    v = inputs.validation
    if v is None:
        return
    s = plan.state
    if s.state == "correction_required" and s.correction.forecast is not None:
        from factory.review.snapshot import measure_fix  # git: only when measuring a fix

        assert s.review is not None
        delta = measure_fix(
            ctx.wt,
            s.initial_snapshot,
            s.current_snapshot.candidate_tree,
            s.review.fix_finding_ids,
            lineage_policy(ctx, loaded),
        )
        op = machine.CompleteFix(delta.fix, delta.candidate, delta.lines, v)
        plan.apply("complete-fix", op)
        plan.consumed.append("--validation")
    elif s.state != "correction_required" and _same_validation(s, v):
        plan.consumed.append("--validation")
    elif s.state == "correction_required":
        raise machine.refuse(
            s,
            "no correction forecast is pending",
            FORECAST_REQUIRED,
        )
    else:
        plan.unused.append("--validation")


def stage_finish(plan: Plan, inputs: Inputs, args: FinalizeArgs) -> bool:
    """Apply ``--evidence`` / ``--failed``; True when ``--evidence-run`` must run now."""
    s, fe = plan.state, inputs.evidence
    if s.state in TERMINAL:
        _terminal_retry(plan, inputs, args)
        return False
    if args.evidence_run is not None:
        if s.state == "validating":
            return True
        plan.unused.append("--evidence-run")
        if not args.failed:
            return False
    blobs = {EVIDENCE_ROLE: inputs.evidence_bytes} if fe is not None else {}
    if s.state == "validating" and fe is not None:
        plan.apply("finish", machine.Finish(fe), blobs)
        plan.consumed.append("--evidence")
    elif args.failed:
        plan.apply("abandon", machine.Abandon(fe), blobs)
        plan.consumed.append("--failed")
    elif fe is not None:
        plan.unused.append("--evidence")
    return False


def _terminal_retry(plan: Plan, inputs: Inputs, args: FinalizeArgs) -> None:
    s, fe = plan.state, inputs.evidence
    recorded = s.final_evidence
    if fe is not None:
        if recorded is None or (recorded.sha256, recorded.declared_failed) != (
            fe.sha256,
            fe.declared_failed,
        ):
            raise plan.conflict("the final evidence")
        plan.consumed.append("--evidence")
    if args.evidence_run is not None:
        if recorded is None or recorded.run is None or recorded.run.argv != args.evidence_run:
            raise plan.conflict("the evidence run")
        plan.consumed.append("--evidence-run")
    if args.failed:
        if s.state != "escalated":
            raise plan.conflict("--failed")
        plan.consumed.append("--failed")


def commit(
    ctx: Context, loaded: Loaded, steps: list[tuple[str, ReviewState, dict[str, bytes]]]
) -> Loaded:
    """Persist each simulated successor in order, each by compare-and-swap on the previous
    one (the chain starts at ``loaded``'s revision, so a concurrent move is a conflict).

    A conflict where the lineage already stands at one of this chain's own later steps (an
    identical call got there first) is that step's idempotent success; any other conflict
    is raised, nothing of this call written.
    """
    current, i = loaded, 0
    if not steps:
        return current
    with ctx.store.locked("review/finalize"):  # one acquisition for the whole chain
        while i < len(steps):
            name, new, blobs = steps[i]
            try:
                current = ctx.store.replace(
                    current.revision,
                    new,
                    command=f"review/{name}",
                    blobs=blobs,
                    previous=current.state,
                ).loaded
            except ReviewCasConflict:
                there = ctx.store.load(current.lineage_id)
                ahead = [
                    j for j in range(i, len(steps)) if revision_of(steps[j][1]) == there.revision
                ]
                if not ahead:
                    raise
                current, i = there, ahead[0]
            i += 1
    return current


def _any_input(args: FinalizeArgs) -> bool:
    return bool(
        args.results
        or args.refuter
        or args.validation
        or args.evidence is not None
        or args.evidence_run is not None
        or args.correction_lines is not None
        or args.failed
        or args.replay
    )


def finalize(ctx: Context, args: FinalizeArgs) -> tuple[dict[str, Any], int]:
    """Run ``factory review finalize``; return its JSON and exit code (3 when escalated).

    Raises:
        ReviewInputInvalid: a malformed input (nothing changed).
        ReviewRefused: no input applies, or an input contradicts the record.
        ReviewCasConflict: another process moved the lineage first (rerun).
    """
    inputs = parse_args(args)
    lineage = args.lineage or (inputs.replay[3] if inputs.replay is not None else None)
    loaded = resolve_lineage(ctx, lineage)
    plan = Plan(loaded.state)
    stage_replay(plan, inputs)
    stage_results(plan, inputs)
    stage_review(plan, inputs)
    stage_forecast(plan, ctx, loaded, args.correction_lines)
    stage_fix(plan, ctx, loaded, inputs)
    run_now = stage_finish(plan, inputs, args)
    if _any_input(args) and not (plan.steps or plan.consumed or run_now):
        raise ReviewRefused(
            f"none of the given inputs applies to lineage {plan.state.lineage_id}, which is "
            f"{plan.state.state}",
            code=NOTHING_APPLIES,
            next=machine.next_commands(plan.state),
        )
    plan_hook()
    loaded = commit(ctx, loaded, plan.steps)
    applied = [name for name, _, _ in plan.steps]
    if run_now:
        from factory.review.evidence_run import run_evidence  # trio and the supervisor

        assert args.evidence_run is not None
        ran = run_evidence(
            ctx.wt,
            loaded.state,
            lineage_policy(ctx, loaded),
            args.evidence_run,
            declared_failed=args.failed,
        )
        finished = machine.apply(loaded.state, machine.Finish(ran.evidence))
        loaded = commit(ctx, loaded, [("finish", finished, ran.blobs)])
        applied.append("finish")
        plan.consumed.append("--evidence-run")
    receipt = None
    if loaded.state.state in RECEIPTED:
        receipt = ctx.store.write_receipt(loaded)
    view = finalize_view(loaded, applied, plan.unused, receipt)
    code = ExitCode.REJECTED if loaded.state.state == "escalated" else ExitCode.OK
    return view, int(code)

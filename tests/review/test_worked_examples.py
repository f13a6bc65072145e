"""The reference's worked examples, as tests (issue 12): the 120-line budget arithmetic and
the four-route payment diff; plus the causal rules its users hit (a finding outside the
snapshot admitted; ids filled in after causal checks)."""

from __future__ import annotations

import json

import pytest

from factory.review import machine
from factory.review.admission import admit
from factory.review.errors import ReviewInputInvalid, ReviewRefused
from factory.review.judgement import RefuterInput
from factory.review.receipt import derive_receipt
from factory.review.state import ReviewState
from tests.review import builders as b

CHARGE = "src/payments/charge.py"


def _corrected(lines: int = 120) -> ReviewState:
    s = b.record_all(b.started(lines=lines), {"reliability": [b.finding(f"{CHARGE}:12")]})
    s = machine.apply(s, machine.CompleteReview(None))
    assert s.state == "correction_required"
    return s


def _attempt(s: ReviewState, n: int, forecast: int, actual: int, passed: bool) -> ReviewState:
    s = machine.apply(s, machine.Forecast(forecast))
    assert s.state == "correction_required"
    f = b.fix(s, n, actual)
    return machine.apply(s, machine.CompleteFix(f.fix, f.candidate, actual, b.validation(passed)))


def test_120_line_candidate_budget_arithmetic_18_then_22_then_25_escalates() -> None:
    s = _corrected(120)
    assert s.correction_budget == 60
    s = _attempt(s, 1, forecast=20, actual=18, passed=False)
    assert (s.state, s.correction.cumulative_lines) == ("correction_required", 18)
    s = _attempt(s, 2, forecast=25, actual=22, passed=False)
    assert (s.state, s.correction.cumulative_lines) == ("correction_required", 40)
    over = machine.apply(s, machine.Forecast(25))
    assert over.state == "escalated"
    assert over.escalation is not None and over.escalation.reason == "forecast_over_budget"
    assert over.correction.forecast == 25  # the forecast is persisted, before any edit
    assert derive_receipt(over).terminal_state == "escalated"


def test_120_line_candidate_forecast_15_proceeds_and_a_third_failure_escalates_under_budget() -> (
    None
):
    s = _attempt(_attempt(_corrected(120), 1, 20, 18, False), 2, 25, 22, False)
    proceed = machine.apply(s, machine.Forecast(15))
    assert (proceed.state, proceed.correction.forecast) == ("correction_required", 15)
    third = _attempt(s, 3, 15, 15, passed=False)
    assert third.state == "escalated" and third.correction.cumulative_lines == 55 < 60
    assert third.escalation is not None and third.escalation.reason == "attempts_exhausted"


def test_a_passing_third_attempt_validates_then_approves_with_the_fix_bound() -> None:
    s = _attempt(_attempt(_corrected(120), 1, 20, 18, False), 2, 25, 22, False)
    s = _attempt(s, 3, 15, 15, passed=True)
    assert s.state == "validating" and s.fix_delta_hash == s.correction.attempts[-1].fix.identity
    done = machine.apply(s, machine.Finish(b.evidence()))
    receipt = derive_receipt(done)
    assert receipt.resolved_finding_ids == ("R3-001",)
    assert receipt.final_candidate_tree != receipt.initial_review_tree
    assert receipt.fix_delta_hash == s.fix_delta_hash


def test_a_zero_line_attempt_escalates_at_once() -> None:
    s = _attempt(_corrected(), 1, forecast=5, actual=0, passed=True)
    assert s.escalation is not None and s.escalation.reason == "zero_line_attempt"
    assert len(s.correction.attempts) == 1  # the attempt is kept


def test_measured_lines_over_the_budget_escalate_even_when_the_forecast_fit() -> None:
    s = _attempt(_corrected(10), 1, forecast=4, actual=9, passed=True)
    assert s.correction_budget == 5
    assert s.escalation is not None and s.escalation.reason == "correction_over_budget"


def _payment_findings(with_unknown: bool = True) -> list[dict[str, object]]:
    out = [
        b.finding(f"{CHARGE}:12", claim="accepts a negative amount"),  # deterministic, introduced
        b.finding(
            "src/payments/cache.py:30",
            evidence_class="inferential",
            causal="pre-existing",
            claim="cache race, same on base",
        ),
        b.finding(
            "README.md:1",
            severity="SUGGESTION",
            evidence_class=None,
            causal=None,
            claim="rename charge() to capture()",
        ),
    ]
    if with_unknown:
        out.append(
            b.finding(
                "src/net/timeout.py:7",
                evidence_class="inferential",
                causal="unknown",
                claim="a new timeout under load",
            )
        )
    return out


def test_four_route_payment_diff_correction_follow_up_escalation_information() -> None:
    s = b.record_all(b.started(), {"reliability": _payment_findings()})
    by_claim = {f.claim: f.id for f in s.findings()}
    s = machine.apply(s, machine.CompleteReview(None))
    assert s.review is not None
    outcome = {o.finding_id: o.outcome for o in s.review.outcomes}
    assert outcome[by_claim["accepts a negative amount"]] == "corroborated"
    assert outcome[by_claim["cache race, same on base"]] == "info"
    assert outcome[by_claim["a new timeout under load"]] == "inconclusive"
    assert outcome[by_claim["rename charge() to capture()"]] == "info"
    assert s.review.fix_finding_ids == (by_claim["accepts a negative amount"],)
    assert [f.finding_id for f in s.review.follow_ups] == [by_claim["cache race, same on base"]]
    assert s.state == "escalated" and s.escalation is not None
    assert s.escalation.reason == "inconclusive_finding"


def test_the_same_diff_without_the_unknown_timeout_routes_to_correction() -> None:
    s = b.record_all(b.started(), {"reliability": _payment_findings(with_unknown=False)})
    s = machine.apply(s, machine.CompleteReview(None))
    assert s.state == "correction_required"


@pytest.mark.parametrize(
    ("location", "admitted"),
    [
        (f"{CHARGE}:12", True),  # twin: inside genesis, path:line
        ("src/elsewhere.py:12", False),  # outside the snapshot (#1314)
        (f"{CHARGE}", False),  # no line
        (f"{CHARGE}:0", False),
        (f"{CHARGE}:12-14", False),
        (f"./{CHARGE}:12", False),
    ],
)
def test_candidate_causal_location_must_be_path_line_inside_genesis(
    location: str, admitted: bool
) -> None:
    s = b.record_all(b.started(), {"reliability": [b.finding(location)]})
    s = machine.apply(s, machine.CompleteReview(None))
    assert s.review is not None
    assert s.review.classifications[0].location_admitted is admitted
    assert s.state == ("correction_required" if admitted else "escalated")


def _refuter(*rows: tuple[str, str]) -> RefuterInput:
    doc = {
        "results": [
            {"finding_id": i, "outcome": o, "proof_refs": ["read line 40"]} for i, o in rows
        ]
    }
    return RefuterInput.model_validate_json(json.dumps(doc))


def _inferential_state() -> ReviewState:
    findings = [
        b.finding(f"{CHARGE}:{n}", evidence_class="inferential", claim=f"claim {n}")
        for n in (10, 20, 30)
    ]
    return b.record_all(b.started(), {"reliability": findings})


def test_inferential_findings_go_to_one_refuter_batch() -> None:
    s = _inferential_state()
    with pytest.raises(ReviewRefused, match="--refuter"):
        machine.apply(s, machine.CompleteReview(None))
    done = machine.apply(
        s,
        machine.CompleteReview(
            _refuter(("R3-001", "corroborated"), ("R3-002", "refuted"), ("R3-003", "corroborated"))
        ),
    )
    assert done.review is not None and done.review.fix_finding_ids == ("R3-001", "R3-003")
    assert {o.finding_id: o.outcome for o in done.review.outcomes}["R3-002"] == "refuted"
    incon = machine.apply(
        s,
        machine.CompleteReview(
            _refuter(("R3-001", "corroborated"), ("R3-002", "inconclusive"), ("R3-003", "refuted"))
        ),
    )
    assert incon.state == "escalated"


@pytest.mark.parametrize(
    "rows",
    [
        (("R3-001", "corroborated"), ("R3-002", "refuted")),  # one missing
        (
            ("R3-001", "corroborated"),
            ("R3-002", "refuted"),
            ("R3-003", "refuted"),
            ("R3-004", "refuted"),
        ),
        (
            ("R3-001", "corroborated"),
            ("R3-001", "refuted"),
            ("R3-002", "refuted"),
            ("R3-003", "refuted"),
        ),
    ],
)
def test_a_refuter_batch_that_does_not_match_the_pending_findings_changes_nothing(
    rows: tuple[tuple[str, str], ...],
) -> None:
    s = _inferential_state()
    with pytest.raises(ReviewInputInvalid):
        machine.apply(s, machine.CompleteReview(_refuter(*rows)))


def test_finding_ids_are_fixed_at_capture_before_any_causal_check() -> None:
    findings = _payment_findings()
    s1 = b.record_all(b.started(), {"reliability": findings})
    s2 = b.record_all(b.started(), {"reliability": list(reversed(findings))})
    r1, r2 = s1.lens_results[0], s2.lens_results[0]
    assert (r1.findings, r1.result_hash) == (r2.findings, r2.result_hash)  # same ids, same hash
    assert r1.source.raw_sha256 != r2.source.raw_sha256  # although the raw answers differ
    admitted = machine.apply(s1, machine.CompleteReview(None))
    assert admitted.review is not None
    assert [o.finding_id for o in admitted.review.outcomes] == [f.id for f in s1.findings()]
    assert admit(s1.findings(), s1.genesis_paths, None) == admitted.review

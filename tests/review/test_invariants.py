"""The one invariant check catches semantic edits that keep a record parseable: a forged
downgrade, budget, id, hash, attempt or escalation never loads (each with a valid twin)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from factory.review import machine
from factory.review.invariants import state_problems
from factory.review.risk import Risk, RiskReason
from factory.review.state import ReviewState
from tests.review import builders as b


def _corrected() -> ReviewState:
    s = b.record_all(b.started(), {"reliability": [b.finding("src/payments/charge.py:12")]})
    s = machine.apply(s, machine.CompleteReview(None))
    s = machine.apply(s, machine.Forecast(10))
    f = b.fix(s, 1, 8)
    s = machine.apply(s, machine.CompleteFix(f.fix, f.candidate, 8, b.validation(passed=False)))
    s = machine.apply(s, machine.Forecast(10))
    f = b.fix(s, 2, 6)
    return machine.apply(s, machine.CompleteFix(f.fix, f.candidate, 6, b.validation()))


def _edit_result(s: ReviewState, **update: object) -> ReviewState:
    r = s.lens_results[0]
    return s.model_copy(update={"lens_results": (r.model_copy(update=update),)})


def _edit_finding(s: ReviewState, **update: object) -> ReviewState:
    r = s.lens_results[0]
    f = r.findings[0].model_copy(update=update)
    return s.model_copy(update={"lens_results": (r.model_copy(update={"findings": (f,)}),)})


def _edit_attempt(s: ReviewState, index: int, **update: object) -> ReviewState:
    attempts = list(s.correction.attempts)
    attempts[index] = attempts[index].model_copy(update=update)
    return s.model_copy(
        update={"correction": s.correction.model_copy(update={"attempts": tuple(attempts)})}
    )


FORGERIES: dict[str, Callable[[ReviewState], ReviewState]] = {
    "risk downgraded (lenses no longer follow)": lambda s: s.model_copy(
        update={"risk": Risk(level="low", reasons=(RiskReason(code="docs_only", example=None),))}
    ),
    "budget raised": lambda s: s.model_copy(update={"correction_budget": 200}),
    "finding id renamed": lambda s: _edit_finding(s, id="R3-007"),
    "finding claim edited under its hash": lambda s: _edit_finding(s, claim="something else"),
    "lens result hash forged": lambda s: _edit_result(s, result_hash="sha256:" + "0" * 64),
    "fix ids widened": lambda s: s.model_copy(
        update={"review": s.review.model_copy(update={"fix_finding_ids": ("R3-001", "R3-002")})}  # type: ignore[union-attr]
    ),
    "attempt lines shrunk": lambda s: _edit_attempt(s, 0, actual_lines=1),
    "attempt check unbound from its delta": lambda s: _edit_attempt(
        s,
        1,
        original_criteria=s.correction.attempts[1].original_criteria.model_copy(
            update={"passed": False}
        ),
    ),
    "genesis widened": lambda s: s.model_copy(
        update={"genesis_paths": (*s.genesis_paths, "zzz.py")}
    ),
    "approved without evidence": lambda s: s.model_copy(update={"state": "approved"}),
    "escalated without a true reason": lambda s: machine.apply(s, machine.Abandon(None)).model_copy(
        update={"escalation": machine.Escalation(reason="attempts_exhausted", detail="x")}
    ),
}


def test_the_valid_twin_has_no_problem() -> None:
    assert state_problems(_corrected()) == []


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_each_forgery_breaks_an_invariant(forgery: str) -> None:
    assert state_problems(FORGERIES[forgery](_corrected())), forgery

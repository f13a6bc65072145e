"""The review states of the (state × operation) matrix, shared by the matrix and the
graph tests: each a function that builds one immutable state (cached)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from factory.review import machine
from factory.review.state import ReviewState
from tests.review import builders as b

CRIT_DET = b.finding("src/payments/charge.py:12")
CRIT_INF = b.finding("src/payments/charge.py:40", evidence_class="inferential")


def _reviewing_empty() -> ReviewState:
    return b.started()


def _reviewing_partial() -> ReviewState:
    s = b.started(level="high")
    for lens in s.lenses[:2]:
        s = machine.apply(s, machine.RecordLens(b.lens_result(s, lens, [])))
    return s


def _reviewing_needs_refuter() -> ReviewState:
    return b.record_all(b.started(), {"reliability": [CRIT_INF]})


def _reviewing_zero_lenses() -> ReviewState:
    return b.started(level="low", paths=("README.md",))


def _correction() -> ReviewState:
    s = b.record_all(b.started(), {"reliability": [CRIT_DET]})
    return machine.apply(s, machine.CompleteReview(None))


def _correction_forecast() -> ReviewState:
    return machine.apply(_correction(), machine.Forecast(10))


def _correction_after_failed() -> ReviewState:
    s = _correction_forecast()
    f = b.fix(s, 1, 8)
    return machine.apply(s, machine.CompleteFix(f.fix, f.candidate, 8, b.validation(passed=False)))


def _validating() -> ReviewState:
    return machine.apply(b.record_all(b.started(), {}), machine.CompleteReview(None))


def _approved() -> ReviewState:
    return machine.apply(_validating(), machine.Finish(b.evidence()))


def _escalated() -> ReviewState:
    return machine.apply(_validating(), machine.Finish(b.evidence(failed=True)))


def _escalated_inconclusive() -> ReviewState:
    unknown = b.finding("src/net/timeout.py:3", causal="unknown")
    s = b.record_all(b.started(), {"reliability": [unknown]})
    return machine.apply(s, machine.CompleteReview(None))


def _invalidated() -> ReviewState:
    return machine.apply(b.started(), machine.Invalidate("the start was abandoned"))


STATES: dict[str, Callable[[], ReviewState]] = {  # cached: states are immutable
    "reviewing/empty": _reviewing_empty,
    "reviewing/partial": _reviewing_partial,
    "reviewing/needs-refuter": _reviewing_needs_refuter,
    "reviewing/zero-lenses": _reviewing_zero_lenses,
    "correction_required": _correction,
    "correction_required/forecast": _correction_forecast,
    "correction_required/after-failed": _correction_after_failed,
    "validating": _validating,
    "approved": _approved,
    "escalated/verification": _escalated,
    "escalated/inconclusive": _escalated_inconclusive,
    "invalidated": _invalidated,
}
STATES = {name: functools.cache(make) for name, make in STATES.items()}

"""The whole (state × operation) matrix: every cell is a legal transition or a refusal that
names the next legal command — no wedged state (issue 12; the reference's "no sanctioned
exit" reports). Each next command a state names is itself accepted in that state."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pytest

from factory.review import machine
from factory.review.errors import ReviewRefused
from factory.review.judgement import RefuterInput
from factory.review.state import ReviewState, make_snapshot
from factory.review.successor import EDGES
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
}
STATES = {name: functools.cache(make) for name, make in STATES.items()}


def _record(s: ReviewState) -> machine.Operation:
    missing = s.missing_lenses()
    if missing:
        return machine.RecordLens(b.lens_result(s, missing[0], []))
    if s.lenses:  # a second, different judgement of an already judged lens
        other = b.lens_result(s, s.lenses[0], [b.finding("README.md:1", severity="WARNING")])
        return machine.RecordLens(other)
    probe = b.lens_result(b.started(), "reliability", [])
    return machine.RecordLens(probe)


def _refuter(s: ReviewState) -> machine.Operation:
    pending = machine.admit_pending(s) if s.state == "reviewing" else ()
    results = [
        {"finding_id": i, "outcome": "corroborated", "proof_refs": ["line 40 drops the guard"]}
        for i in pending
    ]
    return machine.CompleteReview(
        RefuterInput.model_validate_json(json.dumps({"results": results}))
    )


def _fix(s: ReviewState) -> machine.Operation:
    if s.review is not None:
        return b.fix(s, 99, 5)
    snap = make_snapshot("fix-diff", b.CAND, b.tree(99), b.PATHS[:1], ())
    return machine.CompleteFix(snap, b.snapshot(cand=b.tree(99)), 5, b.validation())


OPERATIONS: dict[str, Callable[[ReviewState], machine.Operation]] = {
    "start": lambda s: b.create(),
    "record-lens": _record,
    "complete-review": lambda s: machine.CompleteReview(None),
    "complete-review+refuter": _refuter,
    "forecast": lambda s: machine.Forecast(10),
    "complete-fix": _fix,
    "finish": lambda s: machine.Finish(b.evidence()),
    "abandon": lambda s: machine.Abandon(None),
}


@pytest.mark.parametrize("op_name", list(OPERATIONS))
@pytest.mark.parametrize("state_name", list(STATES))
def test_every_cell_is_a_transition_or_a_refusal_naming_the_next_command(
    state_name: str, op_name: str
) -> None:
    state = STATES[state_name]()
    op = OPERATIONS[op_name](state)
    try:
        new = machine.apply(state, op)
    except ReviewRefused as exc:
        assert exc.next, f"{state_name} × {op_name}: a refusal without next commands"
        assert exc.next == machine.next_commands(state)
        assert exc.next[0] in exc.message, exc.message
        return
    assert new is state or (state.state, new.state) in EDGES


def _op_for(command: str, s: ReviewState) -> machine.Operation | None:
    """The operation a next-command template stands for (None: read-only or new lineage)."""
    if command.startswith("factory review lens"):
        lens = command.rsplit(" ", 1)[1]
        return machine.RecordLens(b.lens_result(s, lens, []))  # type: ignore[arg-type]
    if "--result" in command:
        return machine.RecordLens(b.lens_result(s, s.missing_lenses()[0], []))
    if "--refuter" in command:
        return _refuter(s)
    if "--correction-lines" in command:
        return machine.Forecast(1)
    if "--validation" in command:
        return b.fix(s, 7, 1)
    if "--evidence" in command and "[" not in command:
        return machine.Finish(b.evidence())
    if "[--evidence FILE]" in command:
        return machine.CompleteReview(None)
    if "--failed" in command:
        return machine.Abandon(None)
    assert command.startswith(("factory review show", "factory review start")), command
    return None


@pytest.mark.parametrize("state_name", list(STATES))
def test_each_named_next_command_is_accepted_in_that_state(state_name: str) -> None:
    state = STATES[state_name]()
    commands = machine.next_commands(state)
    assert commands
    for command in commands:
        op = _op_for(command, state)
        if op is not None:
            new = machine.apply(state, op)
            assert (state.state, new.state) in EDGES


def test_no_state_is_wedged_every_non_terminal_state_can_reach_a_terminal_one() -> None:
    for name, make in STATES.items():
        s = make()
        if s.state in ("approved", "escalated"):
            continue
        assert machine.apply(s, machine.Abandon(None)).state == "escalated", name

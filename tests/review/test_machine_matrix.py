"""The whole (state × operation) matrix: every cell is a legal transition or a refusal that
names the next legal command — no wedged state (issue 12; the reference's "no sanctioned
exit" reports). Each next command a state names is itself accepted in that state."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from factory.review import machine
from factory.review.errors import ReviewRefused
from factory.review.judgement import RefuterInput
from factory.review.recovery import DISPOSITIONS, _eligible
from factory.review.snapshot import LiveTarget
from factory.review.state import ReviewState, make_snapshot
from factory.review.store import Loaded
from factory.review.successor import EDGES
from tests.review import builders as b
from tests.review.states import STATES


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
    "invalidate": lambda s: machine.Invalidate("stuck"),
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
    if s.state == "reviewing" and command.endswith(("--evidence FILE", s.lineage_id)):
        return machine.CompleteReview(None)  # finalize completes the review (then finishes)
    if "--evidence" in command:
        return machine.Finish(b.evidence())
    if "--failed" in command:
        return machine.Abandon(None)
    if command.startswith("factory review invalidate"):
        return machine.Invalidate("stuck")
    # Gates and recovery act on the store, not on this lineage's state: they are walked by
    # tests/review/test_graph_and_decide.py, test_gate_table.py and the recover cells below.
    assert command.startswith(
        (
            "factory review show",
            "factory review start",
            "factory review validate",
            "factory review recover",
        )
    ), command
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
        if s.state in ("approved", "escalated", "invalidated"):
            continue
        assert machine.apply(s, machine.Abandon(None)).state == "escalated", name


@pytest.mark.parametrize("disposition", DISPOSITIONS)
@pytest.mark.parametrize("state_name", list(STATES))
def test_every_recover_cell_is_eligible_or_a_refusal_naming_the_next_command(
    state_name: str, disposition: str
) -> None:
    """issue 13 extends the matrix with ``recover``: in every state, each disposition is
    either eligible (with a changed live candidate) or refused naming a next command that
    state accepts."""
    state = STATES[state_name]()
    pred = Loaded(state.lineage_id, "sha256:" + "0" * 64, state, "none")
    moved = LiveTarget(snapshot=b.snapshot(cand=b.tree(77)), changes=())
    try:
        _eligible(pred, disposition, moved)
    except ReviewRefused as exc:
        assert exc.next, f"{state_name} × recover {disposition}: no next command"
        for command in exc.next:
            _op_for(command, state)  # each named command is one this state accepts
        return
    wants = {"scope_changed": "approved", "invalidated": "invalidated", "escalated": "escalated"}
    assert state.state == wants[disposition], (state_name, disposition)
    if disposition == "scope_changed":  # the same candidate again is no scope change
        same = LiveTarget(snapshot=state.current_snapshot, changes=())
        with pytest.raises(ReviewRefused) as unchanged:
            _eligible(pred, disposition, same)
        assert unchanged.value.next[0].startswith("factory review validate")

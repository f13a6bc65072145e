"""The pure evaluator over the stage graph; monotone readiness and evidence-order invariance
as properties (Hypothesis)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factory.gate import logic
from factory.gate.errors import OpenRefused
from factory.gate.evaluate import evaluate
from factory.gate.scenario import Scenario
from factory.gate.state import GENESIS_PREV, RunState, apply, genesis, make_entry, start_body
from tests.gate.helpers import NOW, condition, evidence, observation, scenario


def fresh(sc: Scenario, params: dict[str, str] | None = None) -> RunState:
    return genesis(sc, make_entry("r", 0, GENESIS_PREV, start_body(sc, params or {})))


def accept(sc: Scenario, state: RunState, ev: list, opens: tuple[str, ...] = ()) -> RunState:  # type: ignore[type-arg]
    cand = evaluate(sc, state, ev, NOW, opens)
    body = {
        "kind": "accept",
        "request": cand.candidate,
        "candidate": cand.candidate,
        "evaluation": cand.digest,
        "delta": cand.delta,
    }
    return apply(sc, state, make_entry("r", state.seq + 1, state.head, body))


DIAMOND = [
    {"id": "a", "complete": "ca"},
    {"id": "b", "after": "a", "complete": "cb"},
    {"id": "c", "after": "a", "complete": "cc"},
    {"id": "d", "after": {"all": ["b", "c"]}, "complete": "cd"},
]


def diamond() -> Scenario:
    return scenario([condition(c) for c in ("ca", "cb", "cc", "cd")], DIAMOND, completion="d")


def test_false_and_unknown_both_hold_the_stage_but_the_trace_tells_them_apart() -> None:
    sc = diamond()
    wrong = evaluate(sc, fresh(sc), [evidence(sc, "x", observation("ca", 1))], NOW)
    silent = evaluate(sc, fresh(sc), [], NOW)
    for cand in (wrong, silent):
        assert cand.delta["complete"] == [] and cand.changes_nothing
    assert wrong.record["stages"][0]["completion"]["result"] == "false"
    assert silent.record["stages"][0]["completion"]["result"] == "unknown"
    assert silent.record["conditions"][0]["resolution"] == "missing"
    assert set(silent.record["unevaluated"]) == {"cb", "cc", "cd"}  # their stages are not ready


def test_one_evaluation_settles_a_chain_in_topological_order() -> None:
    sc = diamond()
    ev = [evidence(sc, c, observation(c, 0)) for c in ("ca", "cb", "cc", "cd")]
    cand = evaluate(sc, fresh(sc), ev, NOW)
    assert cand.delta["complete"] == ["a", "b", "c", "d"] and cand.delta["scenario_complete"]
    assert [s["before"] for s in cand.record["stages"]] == [
        "ready",
        "not-ready",
        "not-ready",
        "not-ready",
    ]


def test_a_completed_stage_stays_completed_when_its_evidence_turns() -> None:
    sc = diamond()
    state = accept(sc, fresh(sc), [evidence(sc, "a0", observation("ca", 0))])
    assert state.completed == {"a"}
    later = evaluate(
        sc,
        state,
        [evidence(sc, "a1", observation("ca", 5, observed_at="2026-01-01T00:05:00Z"))],
        NOW,
    )
    assert later.record["stages"][0] == {"stage": "a", "before": "completed", "after": "completed"}


def test_the_scenario_completes_only_by_its_own_law() -> None:
    stages = [{"id": "a", "complete": "c1"}, {"id": "z", "complete": "c2"}]
    sc = scenario([condition("c1"), condition("c2")], stages, completion="a")
    cand = evaluate(sc, fresh(sc), [evidence(sc, "e", observation("c1", 0))], NOW)
    assert cand.delta["scenario_complete"] and cand.delta["complete"] == ["a"]


def test_evaluating_a_completed_run_changes_nothing() -> None:
    sc = diamond()
    ev = [evidence(sc, c, observation(c, 0)) for c in ("ca", "cb", "cc", "cd")]
    state = accept(sc, fresh(sc), ev)
    assert state.scenario_completed
    again = evaluate(sc, state, ev, NOW)
    assert (
        again.changes_nothing
        and again.record["run_completed_before"]
        and again.record["stages"] == []
    )


def test_opening_marks_a_ready_stage_and_nothing_else() -> None:
    sc = diamond()
    state = accept(sc, fresh(sc), [], opens=("a",))
    assert state.stage_state(sc, "a") == "open" and state.opened == {"a"}
    with pytest.raises(OpenRefused, match="open"):
        evaluate(sc, state, [], NOW, ("a",))
    with pytest.raises(OpenRefused, match="not-ready"):
        evaluate(sc, state, [], NOW, ("d",))
    with pytest.raises(OpenRefused, match="not in the scenario"):
        evaluate(sc, state, [], NOW, ("zz",))


def test_intents_come_with_completion_and_are_only_marked_eligible() -> None:
    stages = [{"id": "s", "complete": "c", "intents": [{"kind": "publish", "detail": "artefact"}]}]
    sc = scenario([condition("c")], stages)
    state = accept(sc, fresh(sc), [evidence(sc, "e", observation("c", 0))])
    assert state.intents == (
        {"id": "1/s/0", "kind": "publish", "detail": "artefact", "source": "s"},
    )


# -- properties --------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> tuple[Scenario, list[str]]:
    n = draw(st.integers(1, 8))
    stages = []
    for i in range(n):
        earlier = [f"s{j}" for j in range(i)]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        entry: dict[str, object] = {"id": f"s{i}", "complete": f"c{i}"}
        if deps:
            kind = draw(st.sampled_from(["all", "any", "quorum"]))
            entry["after"] = (
                {"quorum": {"k": draw(st.integers(0, len(deps))), "of": deps}}
                if kind == "quorum"
                else {kind: deps}
            )
        stages.append(entry)
    sc = scenario(
        [condition(f"c{i}") for i in range(n)],
        stages,
        completion={"any": [s["id"] for s in stages]},
    )  # type: ignore[misc]
    growth = draw(st.permutations([f"s{i}" for i in range(n)]))
    return sc, list(growth)


@given(dags())
def test_readiness_is_monotone_in_completed_progress(case: tuple[Scenario, list[str]]) -> None:
    sc, growth = case
    done: set[str] = set()
    ready_before = {
        s for s, st_ in sc.stages.items() if st_.after is None or logic.holds(st_.after, done)
    }
    for stage in growth:
        done.add(stage)
        ready_now = {
            s for s, st_ in sc.stages.items() if st_.after is None or logic.holds(st_.after, done)
        }
        assert ready_before <= ready_now
        ready_before = ready_now


@settings(max_examples=60)
@given(dags(), st.randoms(use_true_random=False), st.data())
def test_evaluation_is_invariant_under_evidence_order(
    case: tuple[Scenario, list[str]], rnd: random.Random, data: st.DataObject
) -> None:
    sc, _ = case
    ev = []
    for i, cid in enumerate(sc.conditions):
        for j in range(data.draw(st.integers(0, 2))):
            value = data.draw(st.sampled_from([0, 1]))
            at = data.draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:01:00+00:00"]))
            ev.append(evidence(sc, f"e{i}-{j}", observation(cid, value, observed_at=at)))
    base = evaluate(sc, fresh(sc), ev, NOW)
    shuffled = list(ev)
    rnd.shuffle(shuffled)
    again = evaluate(sc, fresh(sc), shuffled, NOW)
    assert json.dumps(again.record, sort_keys=True) == json.dumps(base.record, sort_keys=True)
    assert again.digest == base.digest


def test_evaluation_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    sc = diamond()
    assert gc.isenabled()
    evaluate(sc, fresh(sc), [], NOW)
    assert gc.isenabled()
    with pytest.raises(OpenRefused):
        evaluate(sc, fresh(sc), [], NOW, ("zz",))
    assert gc.isenabled()
    gc.disable()
    try:
        evaluate(sc, fresh(sc), [], NOW)
        assert not gc.isenabled()
    finally:
        gc.enable()

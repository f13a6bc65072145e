"""The recovery graph and the gate decision as pure functions (issue 13): every graph
defect fails closed, only leaves authorize, and every (state × gate) answer is a verdict
whose denial names its next command — the gates' part of the "no wedged state" matrix."""

from __future__ import annotations

import pytest

from factory.review import machine
from factory.review.gates.decide import Decision, Live, decide
from factory.review.gates.facts import GraphFacts, graph_facts
from factory.review.gates.result import DENIALS, GATES, Verdict
from factory.review.graph import LineageGraph, build_graph
from factory.review.state import Predecessor, ReviewState
from factory.review.store import Loaded, revision_of
from tests.review import builders as b
from tests.review.states import STATES


def _decide(graph: LineageGraph, lineage: str | None, live: Live, check: object) -> Decision:
    """decide() on the graph's facts, and on the same facts after the gate memo's JSON
    round trip (the hook path decides on those): both must give the same decision."""
    facts = graph_facts(graph)
    d = decide(facts, {}, lineage, live, check)  # type: ignore[arg-type]
    replayed = GraphFacts.from_json(facts.to_json())
    assert replayed == facts
    assert decide(replayed, {}, lineage, live, check) == d  # type: ignore[arg-type]
    return d


def _loaded(s: ReviewState, receipt: str = "ok") -> Loaded:
    if s.state not in ("approved", "escalated"):
        receipt = "none"
    return Loaded(s.lineage_id, revision_of(s), s, receipt)  # type: ignore[arg-type]


def _successor(
    pred: Loaded, lid: str, disposition: str = "scope_changed", rev: str | None = None
) -> Loaded:
    snap = b.snapshot(cand=b.tree(hash(lid) % 1000))
    op = machine.Create(
        lineage_id=lid,
        policy_hash=b.POLICY,
        focus="reliability",
        snapshot=snap,
        risk=b.risk(),
        changed_lines=10,
        generation=pred.state.generation + 1,
        predecessor=Predecessor(
            lineage_id=pred.lineage_id,
            revision=rev or pred.revision,
            disposition=disposition,  # type: ignore[arg-type]
            reason="r",
            actor="a",
        ),
    )
    return _loaded(machine.apply(None, op))


def _approved() -> Loaded:
    return _loaded(STATES["approved"]())


def test_a_valid_recovery_edge_supersedes_and_only_the_leaf_is_authority() -> None:
    pred = _approved()
    succ = _successor(pred, "review-succ-g2")
    graph = build_graph([pred, succ])
    assert graph.problems == () and graph.superseded(pred.lineage_id)
    assert [x.lineage_id for x in graph.leaves()] == ["review-succ-g2"]
    assert "superseded" in (graph.authority_problem(pred.lineage_id) or "")
    assert graph.chain("review-succ-g2") == ("review-succ-g2", pred.lineage_id)


@pytest.mark.parametrize(
    "kind",
    ["dangling-predecessor", "predecessor-revision-mismatch", "fork", "disposition-mismatch"],
)
def test_every_graph_defect_fails_closed(kind: str) -> None:
    pred = _approved()
    items: list[Loaded] = []
    if kind == "dangling-predecessor":
        items = [_successor(pred, "review-orphan-g2")]
    elif kind == "predecessor-revision-mismatch":
        items = [pred, _successor(pred, "review-stale-g2", rev="sha256:" + "5" * 64)]
    elif kind == "fork":
        items = [pred, _successor(pred, "review-a-g2"), _successor(pred, "review-b-g2")]
    else:
        items = [pred, _successor(pred, "review-x-g2", disposition="escalated")]
    graph = build_graph(items)
    assert kind in {p.kind for p in graph.problems}
    assert [x.lineage_id for x in graph.leaves()] == []
    for x in items:
        assert graph.authority_problem(x.lineage_id) is not None


def _live(gate: str, cand: str, base: str = b.BASE, problem: Verdict | None = None) -> Live:
    return Live(
        gate=gate,  # type: ignore[arg-type]
        kind="current-changes",
        natural_base=base,
        candidate_tree=cand,
        paths=b.PATHS,
        head_commit="c" * 40,
        head_tree=base,
        staged_tree=None,
        delivery=(),
        problem=problem,
    )


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("state_name", list(STATES))
@pytest.mark.parametrize("lineage", [True, False])
def test_every_state_at_every_gate_is_a_verdict_naming_its_next_command(
    state_name: str, gate: str, lineage: bool
) -> None:
    x = _loaded(STATES[state_name]())
    graph = build_graph([x])
    cand = x.state.current_snapshot.candidate_tree
    d = _decide(graph, x.lineage_id if lineage else None, _live(gate, cand), lambda s: None)
    v = d.verdict
    assert v.next, (state_name, gate)
    if v.denial is None:
        assert x.state.state == "approved"
        return
    assert v.denial in DENIALS and v.next[0] in v.reason
    expected = {
        "escalated": "receipt-validation/escalated",
        "invalidated": "receipt-validation/invalidated",
    }.get(x.state.state, "receipt-validation/not-terminal")
    if not lineage and x.state.state not in ("approved", "escalated"):
        expected = "receipt-discovery/missing"
    assert v.denial == expected


def test_discovery_prefers_the_live_base_and_says_ambiguous_otherwise() -> None:
    one = _approved()
    other_state = one.state.model_copy(update={"lineage_id": "review-twin"})
    other = Loaded("review-twin", revision_of(other_state), other_state, "ok")
    graph = build_graph([one, other])
    cand = one.state.current_snapshot.candidate_tree
    d = _decide(graph, None, _live("pre-commit", cand, base="9" * 40), lambda s: None)
    assert d.verdict.denial == "receipt-discovery/ambiguous"
    assert all(
        n.startswith("factory review validate --gate pre-commit --lineage") for n in d.verdict.next
    )


def test_a_derivation_problem_and_a_base_denial_come_after_the_state_checks() -> None:
    from factory.review.gates.result import deny

    x = _approved()
    graph = build_graph([x])
    cand = x.state.current_snapshot.candidate_tree
    empty = deny("delivery-derivation/empty-commit", "empty", "git reset --soft HEAD~1")
    d = _decide(graph, None, _live("pre-push", cand, problem=empty), lambda s: None)
    assert d.verdict.denial == "delivery-derivation/empty-commit"
    base = deny("receipt-binding/base-mismatch", "moved", "factory review start")
    d2 = _decide(graph, None, _live("pre-push", cand), lambda s: base)
    assert d2.verdict.denial == "receipt-binding/base-mismatch"


def test_an_approval_on_rehearsal_lens_results_never_passes_and_names_its_exit() -> None:
    s = b.started()
    r = b.lens_result(s, "reliability", [])
    source = r.source.model_copy(update={"kind": "lens-run", "route": "rehearsal"})
    s = machine.apply(s, machine.RecordLens(r.model_copy(update={"source": source})))
    s = machine.apply(machine.apply(s, machine.CompleteReview(None)), machine.Finish(b.evidence()))
    x = _loaded(s)
    cand = s.current_snapshot.candidate_tree
    d = _decide(build_graph([x]), None, _live("pre-push", cand), lambda s: None)
    assert d.verdict.denial == "receipt-validation/rehearsal" and "REHEARSAL" in d.verdict.reason
    assert (
        d.verdict.next[0].startswith("factory review recover")
        and "invalidated" in d.verdict.next[0]
    )

"""``factory review validate --gate G``: derive, decide, then decide again under the store
lock before answering (SPEC R; the reference's final authorization).

1. derive the live target of the gate from git (:mod:`~factory.review.gates.live`,
   :mod:`~factory.review.gates.push`, :mod:`~factory.review.gates.boundary`), load every
   lineage and the recovery graph, and decide (:func:`~factory.review.gates.decide.decide`);
2. a denial is answered as it is (failing closed needs no second look);
3. an allow is only a candidate answer: take the store lock — no review command can write
   while it is held — and do it all again: reload and revalidate every lineage, rebuild
   the graph (a new successor supersedes), re-derive the snapshot, HEAD, the index, the
   boundary and the artifacts' digests. Anything that differs from the first pass, or a
   second decision that is not the same allow, answers ``invalidated``
   (``final-authorization/changed``: "changed during final authorization").

The re-check narrows the time-of-check/time-of-use window; it cannot make the commit or
push that follows atomic with it (declared in ``design/review-gates.md``). No model is
called anywhere on this path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from factory.gitio.worktree import Worktree
from factory.review import nextcmd
from factory.review.exits import exit_commands
from factory.review.gates import livememo, memo
from factory.review.gates.decide import Decision, decide
from factory.review.gates.facts import GraphFacts, graph_facts
from factory.review.gates.live import Derived, GateRequest
from factory.review.gates.quick import QUICK_GATES, derive
from factory.review.gates.result import (
    GateContext,
    GateResult,
    LiveView,
    Verdict,
    deny,
    gate_result,
)
from factory.review.graph import LineageGraph, build_graph
from factory.review.receipt import derive_receipt
from factory.review.service import Context, open_context
from factory.review.state import paths_digest
from factory.review.store import ReviewStore


def _no_hook(point: str) -> None:
    return None


#: Test seam: called with ``"decided"`` after the first decision of an allow, before the
#: lock is taken (a test changes the repository or the store there).
between_hook: Callable[[str], None] = _no_hook


def load_graph(store: ReviewStore) -> tuple[LineageGraph, dict[str, str]]:
    graph = build_graph(store.scan())
    return graph, exit_commands(store, graph)


Pass = tuple[Derived, LineageGraph, GraphFacts, Decision]


def _decide(wt: Worktree, store: ReviewStore, req: GateRequest, cached: Derived | None) -> Pass:
    derived = derive(wt, req, cached)
    graph, exits = load_graph(store)
    facts = graph_facts(graph)
    decision = decide(facts, exits, req.lineage, derived.live, derived.base_check, derived.same)
    return derived, graph, facts, decision


def _changed(first: Pass, second: Pass) -> str | None:
    (d1, _, f1, c1), (d2, _, f2, c2) = first, second
    if f1.key() != f2.key():
        return "the review store changed (a lineage was written, recovered or removed)"
    if d1.fingerprint() != d2.fingerprint():
        return "the live target changed (files, index, HEAD, boundary or artifacts)"
    if c2.verdict.denial is not None or c2.chosen is None or c1.chosen is None:
        return f"the second decision is no longer an allow ({c2.verdict.denial})"
    if (c1.chosen.lineage_id, c1.chosen.revision) != (c2.chosen.lineage_id, c2.chosen.revision):
        return "another lineage or revision would authorize now"
    return None


def context(
    wt: Worktree,
    req: GateRequest,
    derived: Derived,
    graph: LineageGraph,
    decision: Decision,
    recheck: str,
) -> GateContext:
    lv, chosen = derived.live, decision.chosen
    s = graph.valid[chosen.lineage_id].state if chosen is not None else None
    receipt = derive_receipt(s) if s is not None and s.state in ("approved", "escalated") else None
    live = None
    if lv.candidate_tree:
        live = LiveView(
            kind=lv.kind,  # type: ignore[arg-type]
            base_tree=lv.natural_base,
            candidate_tree=lv.candidate_tree,
            paths_digest=paths_digest(lv.paths),
            changed_paths=len(lv.paths),
            head_commit=lv.head_commit,
            staged_tree=lv.staged_tree,
            delivery_commits=lv.delivery,
        )
    return GateContext(
        gate=req.gate,
        repository=str(wt.root),
        lineage_id=chosen.lineage_id if chosen is not None else req.lineage,
        generation=s.generation if s is not None else None,
        store_revision=chosen.revision if chosen is not None else None,
        state=s.state if s is not None else None,
        receipt=receipt,
        live=live,
        boundary=derived.boundary,
        artifacts=derived.artifacts,
        considered=decision.considered,
        corrupt=tuple(sorted(graph.corrupt)),
        final_recheck=recheck,  # type: ignore[arg-type]
        model_calls=0,
        next=(),
    )


def validate(cwd: Path, req: GateRequest, *, store: ReviewStore | None = None) -> GateResult:
    """The gate result for ``req`` in the repository containing ``cwd``; ``store``: the
    authority to judge with instead of the repository's own store (the review mirror's
    refs, laid out as a store by :mod:`factory.review.mirror.fromrefs`).

    Raises:
        FactoryError: a typed failure (git failed, the store is busy, …), never a verdict.
    """
    ctx = open_context(cwd)
    if store is not None:
        ctx = Context(ctx.wt, store)
    first = _decide(ctx.wt, ctx.store, req, None)
    derived, graph, _, decision = first
    if decision.verdict.denial is not None:
        return gate_result(
            decision.verdict, context(ctx.wt, req, derived, graph, decision, "not-needed")
        )
    between_hook("decided")
    with ctx.store.locked(f"review/validate {req.gate}"):
        key = memo.memo_key(ctx.store.root) if req.gate in QUICK_GATES else None
        second = _decide(ctx.wt, ctx.store, req, derived)
        if key is not None and memo.memo_key(ctx.store.root) == key:
            memo.write(ctx.store.root, key, second[2])
    why = _changed(first, second)
    verdict: Verdict = decision.verdict
    recheck = "passed"
    if why is None:
        livememo.save(ctx.wt, second[0])
    else:
        recheck = "changed"
        verdict = deny(
            "final-authorization/changed",
            f"changed during final authorization: {why}",
            nextcmd.validate(req.gate, req.lineage),
        )
    return gate_result(verdict, context(ctx.wt, req, derived, graph, decision, recheck))

"""``factory review validate --gate G``: derive, decide, then decide again under the store
lock before answering (SPEC R; the reference's final authorization).

:func:`check` is the one entry point. Its first step is the cheap one (issue 13's speed
target for hooks; issue 25 folded it in here): at ``pre-commit`` and ``pre-push`` the
store's facts may come from the gate memo (:mod:`~factory.review.gates.memo`), which
replays a full validation of exactly the store's current bytes by exactly this code, and
the first pass of ``pre-commit`` may use the checkout's last confirmed target
(:mod:`~factory.review.gates.livememo`). That step answers only a confirmed allow; a memo
miss, any denial and anything that changed between its two passes fall through to the full
path, which imports the review models:

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

Both steps decide with the same function and write their answer with the same
:func:`document`; the full path also checks it against
:class:`~factory.review.gates.result.GateResult`. A property test over generated
repositories and stores holds the two steps' answers equal
(``tests/review/test_fastpath_property.py``). This module imports no model at import time,
so the hook path stays free of pydantic.

The re-check narrows the time-of-check/time-of-use window; it cannot make the commit or
push that follows atomic with it (declared in ``design/review-gates.md``). No model is
called anywhere on this path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.documents.canonical import digest_plain
from factory.gitio.discover import discover
from factory.gitio.worktree import Worktree
from factory.review import nextcmd
from factory.review.documents import PATHS_TAG
from factory.review.gates import livememo, memo
from factory.review.gates.decide import Decision, decide
from factory.review.gates.facts import GraphFacts
from factory.review.gates.live import Derived, GateRequest, derive_pre_commit, derive_release
from factory.review.gates.verdict import ACTIONS, RESULT_SCHEMA, Verdict, deny
from factory.review.lock import StoreLock

if TYPE_CHECKING:
    from factory.review.gates.result import GateResult
    from factory.review.store import ReviewStore

#: The store under the git common dir (the same parts as ``factory.review.store``).
STORE_PARTS = ("factory", "review", "v1")
#: The gates whose allow the cheap step may answer.
QUICK_GATES = ("pre-commit", "pre-push")


def derive(wt: Worktree, req: GateRequest, cached: Derived | None = None) -> Derived:
    """The live target of ``req.gate`` now (``cached``: an earlier derivation whose stat
    cache or candidate may be reused)."""
    if req.gate == "pre-commit":
        return derive_pre_commit(wt, req, cached)
    if req.gate == "pre-push":
        from factory.review.gates.push import derive_pre_push

        return derive_pre_push(wt, req)
    if req.gate == "pre-pr":
        from factory.review.gates.boundary import derive_pre_pr

        return derive_pre_pr(wt, req, cached)
    return derive_release(wt, req)


def _no_hook(point: str) -> None:
    return None


#: Test seam: called with ``"decided"`` after the first decision of an allow, before the
#: lock is taken (a test changes the repository or the store there). Both steps call it.
between_hook: Callable[[str], None] = _no_hook


@dataclass(frozen=True)
class Answer:
    """The ``factory.review-gate-result/1`` document, and whether the cheap step answered
    (the store's facts replayed from the gate memo)."""

    doc: dict[str, Any]
    replayed: bool

    def model(self) -> GateResult:
        """The document as the typed model (imports pydantic)."""
        import json

        from factory.review.gates.result import GateResult

        return GateResult.model_validate_json(json.dumps(self.doc))


def check(
    cwd: Path, req: GateRequest, *, store: ReviewStore | None = None, use_memo: bool = True
) -> Answer:
    """The gate's answer for ``req`` in the repository containing ``cwd``: the cheap step
    first (unless ``use_memo`` is false or ``store`` is given), else the full path.
    ``store``: the authority to judge with instead of the repository's own store (the
    review mirror's refs, laid out as a store by :mod:`factory.review.mirror.fromrefs`).

    Raises:
        FactoryError: a typed failure (git failed, the store is busy, …), never a verdict.
    """
    if use_memo and store is None and req.gate in QUICK_GATES:
        doc = replayed_allow(cwd, req)
        if doc is not None:
            return Answer(doc, replayed=True)
    return Answer(_full(cwd, req, store), replayed=False)


def validate(cwd: Path, req: GateRequest, *, store: ReviewStore | None = None) -> GateResult:
    """:func:`check` by the full path, as the typed model."""
    return check(cwd, req, store=store, use_memo=False).model()


Pass = tuple[Derived, GraphFacts, Decision]


def _allow(req: GateRequest, facts: GraphFacts, derived: Derived) -> Pass | None:
    decision = decide(facts, {}, req.lineage, derived.live, derived.base_check, derived.same)
    if decision.verdict.denial is not None or decision.chosen is None:
        return None
    return derived, facts, decision


def replayed_allow(cwd: Path, req: GateRequest) -> dict[str, Any] | None:
    """The cheap step alone: the document of an allow decided on the memo's facts, confirmed by
    a second pass under the store lock, or None (take the full path)."""
    wt = discover(cwd)
    root = wt.common_dir.joinpath(*STORE_PARTS)
    found = memo.load(root)
    if found is None:
        return None
    facts = found[1]
    # The first pass: the checkout's last confirmed target when there is one, else a
    # derivation now. Each later pass derives again, reusing the previous pass's candidate
    # only where its witness still holds.
    kept = livememo.restore(wt) if req.gate == "pre-commit" else None
    first = _allow(req, facts, kept) if kept is not None else None
    if first is None:
        kept, first = None, _allow(req, facts, derive(wt, req))
    if first is None:
        return None
    between_hook("decided")
    with StoreLock(root / "LOCK", command=f"review/validate {req.gate}"):
        again = memo.load(root)
        if again is None or again[0] != found[0]:
            return None
        second = _allow(req, facts, derive(wt, req, first[0]))
        if second is not None and kept is not None and _changed(first, second) is not None:
            # The kept target no longer holds: this pass (under the lock, after nothing
            # was decided on it) is the first, and one more confirms it.
            first, second = second, _allow(req, facts, derive(wt, req, second[0]))
    if second is None or _changed(first, second) is not None:
        return None
    livememo.save(wt, second[0])
    return document(wt, req, *first, "passed")


def _full(cwd: Path, req: GateRequest, store: ReviewStore | None) -> dict[str, Any]:
    from factory.review.gates.result import GateResult
    from factory.review.service import Context, open_context

    ctx = open_context(cwd)
    if store is not None:
        ctx = Context(ctx.wt, store)
    first = _decide(ctx.wt, ctx.store, req, None)
    if first[2].verdict.denial is not None:
        doc = document(ctx.wt, req, *first, "not-needed")
    else:
        between_hook("decided")
        with ctx.store.locked(f"review/validate {req.gate}"):
            key = memo.memo_key(ctx.store.root) if req.gate in QUICK_GATES else None
            second = _decide(ctx.wt, ctx.store, req, first[0])
            if key is not None and memo.memo_key(ctx.store.root) == key:
                memo.write(ctx.store.root, key, second[1])
        why = _changed(first, second)
        if why is None:
            livememo.save(ctx.wt, second[0])
            doc = document(ctx.wt, req, *first, "passed")
        else:
            verdict = deny(
                "final-authorization/changed",
                f"changed during final authorization: {why}",
                nextcmd.validate(req.gate, req.lineage),
            )
            doc = document(ctx.wt, req, *first, "changed", verdict=verdict)
    return GateResult.model_validate_json(_json(doc)).to_json_value()


def _json(doc: dict[str, Any]) -> str:
    import json

    return json.dumps(doc)


def _decide(wt: Worktree, store: ReviewStore, req: GateRequest, cached: Derived | None) -> Pass:
    from factory.review.exits import exit_commands
    from factory.review.gates.facts import graph_facts
    from factory.review.graph import build_graph

    derived = derive(wt, req, cached)
    graph = build_graph(store.scan())
    facts = graph_facts(graph)
    exits = exit_commands(store, graph)
    decision = decide(facts, exits, req.lineage, derived.live, derived.base_check, derived.same)
    return derived, facts, decision


def _changed(first: Pass, second: Pass) -> str | None:
    (d1, f1, c1), (d2, f2, c2) = first, second
    if f1.key() != f2.key():
        return "the review store changed (a lineage was written, recovered or removed)"
    if d1.fingerprint() != d2.fingerprint():
        return "the live target changed (files, index, HEAD, boundary or artifacts)"
    if c2.verdict.denial is not None or c2.chosen is None or c1.chosen is None:
        return f"the second decision is no longer an allow ({c2.verdict.denial})"
    if (c1.chosen.lineage_id, c1.chosen.revision) != (c2.chosen.lineage_id, c2.chosen.revision):
        return "another lineage or revision would authorize now"
    return None


def document(
    wt: Worktree,
    req: GateRequest,
    derived: Derived,
    facts: GraphFacts,
    decision: Decision,
    recheck: str,
    *,
    verdict: Verdict | None = None,
) -> dict[str, Any]:
    """The ``factory.review-gate-result/1`` JSON value of ``decision`` (or of ``verdict``,
    which replaces it) on ``derived`` — the one place either step writes its answer."""
    v = verdict or decision.verdict
    lv, chosen = derived.live, decision.chosen
    live = None
    if lv.candidate_tree:
        live = {
            "kind": lv.kind,
            "base_tree": lv.natural_base,
            "candidate_tree": lv.candidate_tree,
            "paths_digest": digest_plain(PATHS_TAG, list(lv.paths)),
            "changed_paths": len(lv.paths),
            "head_commit": lv.head_commit,
            "staged_tree": lv.staged_tree,
            "delivery_commits": list(lv.delivery),
        }
    boundary = derived.boundary
    context = {
        "gate": req.gate,
        "repository": str(wt.root),
        "lineage_id": chosen.lineage_id if chosen is not None else req.lineage,
        "generation": chosen.generation if chosen is not None else None,
        "store_revision": chosen.revision if chosen is not None else None,
        "state": chosen.state if chosen is not None else None,
        "receipt": chosen.receipt_json if chosen is not None else None,
        "live": live,
        "boundary": boundary.to_json_value() if boundary is not None else None,
        "artifacts": [a.to_json_value() for a in derived.artifacts],
        "considered": list(decision.considered),
        "corrupt": list(facts.corrupt),
        "final_recheck": recheck,
        "model_calls": 0,
        "next": list(v.next),
    }
    denial = None
    if v.denial is not None:
        stage, code = v.denial.split("/", 1)
        denial = {"stage": stage, "code": code}
    return {
        "schema": RESULT_SCHEMA,
        "result": v.result,
        "allowed": v.denial is None,
        "action": ACTIONS[v.result],
        "reason": v.reason,
        "denial": denial,
        "context": context,
    }

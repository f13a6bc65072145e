"""The gate's hook path: an allow answered without importing pydantic (SPEC R; issue 13).

``factory review validate`` runs in every commit and push. :func:`try_allow` is the same
protocol as :func:`factory.review.gates.validate.validate` — derive, decide, take the store
lock, derive and decide again, answer only if nothing changed — with one difference: the
store's facts come from the gate memo (:mod:`factory.review.gates.memo`), which replays a
full validation of exactly the store's current bytes by exactly this code, instead of from
validating every record again. The decision is the one function both paths call
(:func:`~factory.review.gates.decide.decide`).

It answers only an allow at ``pre-commit`` or ``pre-push`` (with ``--remote`` too: what
the remote holds is asked live in each pass, as on the full path; only the store's facts
are replayed). Everything else returns None and the caller takes the full path: a memo
miss, another gate, any denial (the full path builds the denial's document), and anything
that changed between the two passes (the full path then decides afresh, and reports
``invalidated`` itself if the target moves under it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from factory.documents.canonical import digest_plain as digest_of
from factory.gitio.discover import discover
from factory.gitio.worktree import Worktree
from factory.review.documents import PATHS_TAG
from factory.review.gates import livememo, memo
from factory.review.gates.decide import Decision, decide
from factory.review.gates.facts import GraphFacts
from factory.review.gates.live import Derived, GateRequest, derive_pre_commit, derive_release
from factory.review.gates.verdict import RESULT_SCHEMA
from factory.review.lock import StoreLock

#: The store under the git common dir (the same parts as ``factory.review.store``).
STORE_PARTS = ("factory", "review", "v1")
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
#: lock is taken (as :data:`factory.review.gates.validate.between_hook`).
between_hook: Callable[[str], None] = _no_hook


Pass = tuple[Derived, Decision]


def _allow(wt: Worktree, req: GateRequest, facts: GraphFacts, derived: Derived) -> Pass | None:
    decision = decide(facts, {}, req.lineage, derived.live, derived.base_check, derived.same)
    if decision.verdict.denial is not None or decision.chosen is None:
        return None
    return derived, decision


def _same(first: Pass, second: Pass | None) -> bool:
    if second is None or second[0].fingerprint() != first[0].fingerprint():
        return False
    c1, c2 = first[1].chosen, second[1].chosen
    assert c1 is not None and c2 is not None
    return (c1.lineage_id, c1.revision) == (c2.lineage_id, c2.revision)


def try_allow(cwd: Path, req: GateRequest) -> dict[str, Any] | None:
    """The ``factory.review-gate-result/1`` document of an allow, or None (take the full
    path). Raises what the derivation raises (a typed failure of git or the lock)."""
    if req.gate not in QUICK_GATES:
        return None
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
    first = _allow(wt, req, facts, kept) if kept is not None else None
    if first is None:
        kept, first = None, _allow(wt, req, facts, derive(wt, req))
    if first is None:
        return None
    between_hook("decided")
    with StoreLock(root / "LOCK", command=f"review/validate {req.gate}"):
        again = memo.load(root)
        if again is None or again[0] != found[0]:
            return None
        second = _allow(wt, req, facts, derive(wt, req, first[0]))
        if not _same(first, second) and kept is not None and second is not None:
            # The kept target no longer holds: this pass (under the lock, after nothing
            # was decided on it) is the first, and one more confirms it.
            first, second = second, _allow(wt, req, facts, derive(wt, req, second[0]))
    if not _same(first, second):
        return None
    assert second is not None
    livememo.save(wt, second[0])
    return allow_document(wt, req, *second)


def allow_document(
    wt: Worktree, req: GateRequest, derived: Derived, decision: Decision
) -> dict[str, Any]:
    """The JSON value of the allow — key for key what
    :func:`~factory.review.gates.result.gate_result` dumps for it (a test compares them)."""
    lv, chosen, verdict = derived.live, decision.chosen, decision.verdict
    assert chosen is not None and verdict.denial is None
    assert derived.boundary is None and not derived.artifacts  # no pre-pr/release here
    live = None
    if lv.candidate_tree:
        live = {
            "kind": lv.kind,
            "base_tree": lv.natural_base,
            "candidate_tree": lv.candidate_tree,
            "paths_digest": digest_of(PATHS_TAG, list(lv.paths)),
            "changed_paths": len(lv.paths),
            "head_commit": lv.head_commit,
            "staged_tree": lv.staged_tree,
            "delivery_commits": list(lv.delivery),
        }
    context = {
        "gate": req.gate,
        "repository": str(wt.root),
        "lineage_id": chosen.lineage_id,
        "generation": chosen.generation,
        "store_revision": chosen.revision,
        "state": chosen.state,
        "receipt": chosen.receipt_json,
        "live": live,
        "boundary": None,
        "artifacts": [],
        "considered": list(decision.considered),
        "corrupt": [],
        "final_recheck": "passed",
        "model_calls": 0,
        "next": list(verdict.next),
    }
    return {
        "schema": RESULT_SCHEMA,
        "result": "allow",
        "allowed": True,
        "action": "continue",
        "reason": verdict.reason,
        "denial": None,
        "context": context,
    }

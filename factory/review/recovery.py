"""``factory review invalidate`` and ``factory review recover`` (SPEC R).

**Invalidate** stops a *pristine* reviewing lineage — nothing judged, corrected or
evidenced yet — as the terminal state ``invalidated`` (compare-and-swap on
``--expected-revision``; an identical retry is an idempotent success). It is the edge for a
start that is stuck or abandoned, never a way to erase judgement.

**Recover** creates a distinct successor from the live workspace — a new lineage of
generation + 1, a fresh budget, ``reviewing`` — that names its predecessor and the exact
revision it replaces; the predecessor's bytes never change. Under the store lock:

* the predecessor must load, be at ``--expected-predecessor-revision``, and be a leaf
  of a valid recovery graph; a second successor of it (a fork) is refused, the same
  successor again is an idempotent success;
* ``scope_changed`` needs an approved predecessor whose candidate really changed (tree or
  base); ``invalidated`` an invalidated predecessor (or one approved on rehearsal lens
  results, which no gate accepts); ``escalated`` an escalated predecessor plus
  ``--maintainer-authorization FILE`` holding exactly the binding
  :func:`~factory.review.authorization.binding_text` gives for (predecessor, revision, the
  successor's target identity, actor, reason).

The successor keeps the predecessor's policy and focus; its lenses, risk and budget are
derived again from the live candidate (``current-changes`` against HEAD).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.review import machine, nextcmd
from factory.review.authorization import binding_text, field_problem, require_authorization
from factory.review.bases import ancestor_with_tree, head_commit, head_tree, start_command
from factory.review.errors import NOTHING_TO_REVIEW, ReviewInputInvalid, ReviewRefused
from factory.review.gate_errors import RECOVER_FORK, RECOVER_NOT_ELIGIBLE, RECOVER_REVISION
from factory.review.graph import LineageGraph, build_graph, disposition_fits, rehearsal_approved
from factory.review.policy import LoadedPolicy
from factory.review.risk import classify
from factory.review.service import POLICY_ROLE, Context, lineage_policy, open_context
from factory.review.snapshot import LiveTarget, live_target
from factory.review.state import Predecessor, ReviewState, SnapshotKind
from factory.review.store import Loaded, revision_of
from factory.review.views import start_view

AUTHORIZATION_ROLE = "recovery-authorization"
DISPOSITIONS = ("scope_changed", "invalidated", "escalated")


def _text_flag(name: str, value: str) -> None:
    problem = field_problem(name, value)
    if problem is not None:
        raise ReviewInputInvalid(f"--{name.replace('_', '-')}: {problem}")


def invalidate(cwd: Path, lineage: str, expected_revision: str, reason: str) -> dict[str, Any]:
    """``factory review invalidate``: a pristine reviewing lineage becomes invalidated."""
    _text_flag("reason", reason)
    ctx = open_context(cwd)
    with ctx.store.locked("review/invalidate"):
        loaded = ctx.store.load(lineage)
        s = loaded.state
        if s.state == "invalidated" and s.invalidation is not None:
            before = s.model_copy(update={"state": "reviewing", "invalidation": None})
            if s.invalidation.reason == reason and revision_of(before) == expected_revision:
                return _view("review/invalidate", loaded, written=False)
        new = machine.apply(s, machine.Invalidate(reason))
        committed = ctx.store.replace(expected_revision, new, command="review/invalidate")
    return _view("review/invalidate", committed.loaded, written=committed.written)


def _view(operation: str, loaded: Loaded, *, written: bool) -> dict[str, Any]:
    s = loaded.state
    return {
        "operation": operation,
        "lineage": s.lineage_id,
        "generation": s.generation,
        "state": s.state,
        "store_revision": loaded.revision,
        "written": written,
        "next": list(machine.next_commands(s)),
    }


def successor_id(target_identity: str, generation: int) -> str:
    """The id of a recovered successor: its target's identity and generation."""
    return f"review-{target_identity.removeprefix('sha256:')[:16]}-g{generation}"


def _eligible(pred: Loaded, disposition: str, live: LiveTarget, committed: bool = False) -> None:
    """``committed``: HEAD's tree is the live candidate (the approval then names pre-push)."""
    s = pred.state
    if not disposition_fits(disposition, s):
        wants = {
            "scope_changed": "an approved predecessor",
            "invalidated": "an invalidated (or rehearsal-approved) predecessor",
            "escalated": "an escalated predecessor",
        }[disposition]
        raise ReviewRefused(
            f"--disposition {disposition} needs {wants}; lineage {s.lineage_id} is {s.state}",
            code=RECOVER_NOT_ELIGIBLE,
            next=machine.next_commands(s),
        )
    if disposition == "scope_changed" and not rehearsal_approved(s):
        snap = live.snapshot
        if snap.candidate_tree == s.current_snapshot.candidate_tree:
            gates = nextcmd.GATE_ORDER[1:] if committed else nextcmd.GATE_ORDER
            raise ReviewRefused(
                f"the live candidate is still the one lineage {s.lineage_id} approved (its "
                "approval holds, committed or not): there is no scope change to recover from",
                code=RECOVER_NOT_ELIGIBLE,
                next=tuple(nextcmd.validate(g) for g in gates),
            )
    if live.snapshot.candidate_tree == live.snapshot.base_tree:
        raise ReviewRefused(
            f"the live candidate is lineage {s.lineage_id}'s base itself: nothing is left to "
            "review (every reviewed change was undone)",
            code=NOTHING_TO_REVIEW,
            next=("factory review status",),
        )


def _live_on_reviewed_base(ctx: Context, pred: Loaded, policy: LoadedPolicy) -> LiveTarget:
    """The live candidate against the base the predecessor reviewed against, which must
    still be HEAD's tree or a first-parent ancestor's (a successor reviews the whole change
    since that base, so every gate — pre-commit, pre-push, pre-pr — finds it again)."""
    base = pred.state.initial_snapshot.base_tree
    commit = ancestor_with_tree(ctx.wt, base)
    if commit is None:
        raise ReviewRefused(
            f"the base lineage {pred.lineage_id} reviewed against is no longer below HEAD "
            "(rebased onto a moved upstream, or another branch): review the candidate on its "
            "new base as a new lineage",
            code=RECOVER_NOT_ELIGIBLE,
            next=(start_command(ctx.wt), "factory review status"),
        )
    kind: SnapshotKind = "current-changes" if commit == head_commit(ctx.wt) else "base-diff"
    return live_target(ctx.wt, kind, base, policy)


def _authorize(
    pred: Loaded, disposition: str, target: str, actor: str, reason: str, path: Path | None
) -> bytes | None:
    if disposition != "escalated":
        if path is not None:
            raise ReviewInputInvalid(
                "--maintainer-authorization is only for --disposition escalated"
            )
        return None
    expected = binding_text(pred.lineage_id, pred.revision, target, actor, reason)
    again = nextcmd.recover(pred.lineage_id, pred.revision, "escalated")
    return require_authorization(path, expected, "an escalated recovery", again)


def _graph_checks(graph: LineageGraph, pred: Loaded, expected: str) -> None:
    lid = pred.lineage_id
    if pred.revision != expected:
        raise ReviewRefused(
            # The whole revision: it is what the next command must be given (issue 28).
            f"lineage {lid} is not at the expected revision (it is at {pred.revision})",
            code=RECOVER_REVISION,
            next=(nextcmd.show(lid), "factory review status"),
        )
    for member in graph.chain(lid):
        problems = graph.problems_of(member)
        if problems and problems[0].kind != "fork":
            raise ReviewRefused(
                f"the recovery graph of {lid} is invalid ({problems[0].detail})",
                code=RECOVER_NOT_ELIGIBLE,
                next=(nextcmd.repair(member, "invalid-recovery-edge"),),
            )


def _successor(
    ctx: Context,
    pred: Loaded,
    disposition: str,
    reason: str,
    actor: str,
    live: LiveTarget,
    authorization: bytes | None,
) -> ReviewState:
    s, snap = pred.state, live.snapshot
    predecessor = Predecessor(
        lineage_id=pred.lineage_id,
        revision=pred.revision,
        disposition=disposition,  # type: ignore[arg-type]
        reason=reason,
        actor=actor,
        authorization_sha256=None if authorization is None else sha256_hex(authorization),
    )
    op = machine.Create(
        lineage_id=successor_id(snap.identity, s.generation + 1),
        policy_hash=s.policy_hash,
        focus=s.focus,
        snapshot=snap,
        risk=classify(list(live.changes)),
        changed_lines=live.changed_lines,
        generation=s.generation + 1,
        predecessor=predecessor,
    )
    return machine.apply(None, op)


def recover(
    cwd: Path,
    *,
    predecessor: str,
    expected_revision: str,
    disposition: str,
    reason: str,
    actor: str,
    authorization: Path | None,
) -> dict[str, Any]:
    """``factory review recover`` (see the module docstring)."""
    _text_flag("reason", reason)
    _text_flag("actor", actor)
    ctx = open_context(cwd)
    pred = ctx.store.load(predecessor)
    policy = lineage_policy(ctx, pred)
    live = _live_on_reviewed_base(ctx, pred, policy)
    with ctx.store.locked("review/recover"):
        graph = build_graph(ctx.store.scan())
        pred = graph.valid.get(predecessor) or ctx.store.load(predecessor)
        _graph_checks(graph, pred, expected_revision)
        at_head = head_tree(ctx.wt) == live.snapshot.candidate_tree
        _eligible(pred, disposition, live, at_head)
        given = _authorize(pred, disposition, live.snapshot.identity, actor, reason, authorization)
        new = _successor(ctx, pred, disposition, reason, actor, live, given)
        existing = graph.successor_of(predecessor)
        if existing:
            return _existing(ctx, graph, existing, new)
        blobs = {POLICY_ROLE: policy.raw}
        if given is not None:
            blobs[AUTHORIZATION_ROLE] = given
        committed = ctx.store.replace(None, new, command="review/recover", seed_blobs=blobs)
    return _recovery_view(committed.loaded, "created", live.golden)


def _existing(
    ctx: Context, graph: LineageGraph, existing: tuple[str, ...], new: ReviewState
) -> dict[str, Any]:
    if existing == (new.lineage_id,):
        current = graph.valid[new.lineage_id]
        if current.state.initial_snapshot == new.initial_snapshot and (
            current.state.predecessor == new.predecessor
        ):
            return _recovery_view(current, "resumed", 0)
    first = existing[0]
    raise ReviewRefused(
        f"lineage {new.predecessor.lineage_id if new.predecessor else '?'} already has a "
        f"successor ({', '.join(existing)}); a second one would fork its authority",
        code=RECOVER_FORK,
        next=(*machine.next_commands(graph.valid[first].state), nextcmd.show(first)),
    )


def _recovery_view(loaded: Loaded, action: str, golden: int) -> dict[str, Any]:
    view = start_view(loaded, action, golden)
    pred = loaded.state.predecessor
    assert pred is not None
    return {**view, "operation": "review/recover", "recovery": pred.to_json_value()}

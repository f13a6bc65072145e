"""Review commands as functions: find the repository and lineage, start, status (SPEC R).

Effects are explicit: git through :mod:`factory.review.snapshot`, the store through
:class:`~factory.review.store.ReviewStore`. Decisions come from the pure modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.display import inert
from factory.gitio.discover import discover
from factory.gitio.worktree import Worktree
from factory.review import machine, nextcmd
from factory.review.errors import (
    LINEAGE_AMBIGUOUS,
    LINEAGE_UNKNOWN,
    LIVE_LINEAGE_EXISTS,
    NOTHING_TO_REVIEW,
    POLICY_MISSING,
    START_CONFLICT,
    ReviewRefused,
)
from factory.review.names import DEFAULT_FOCUS, TERMINAL, LensName
from factory.review.store import Corrupt, Loaded, ReviewStore
from factory.review.views import start_view, status_entry

if TYPE_CHECKING:
    from factory.review.gates.result import GateResult
    from factory.review.gates.verdict import GateName
    from factory.review.policy import LoadedPolicy

# The snapshot machinery (git trees, the index cache, the policy's golden globs) is
# imported by the functions that derive a live target, not by every command that only
# reads and writes the store (finalize with --result/--evidence, status, the gates).

POLICY_ROLE = "policy"


@dataclass(frozen=True, slots=True)
class Context:
    """The checkout a command works on, and its store (under the git common dir)."""

    wt: Worktree
    store: ReviewStore


def open_context(cwd: Path, *, lock_wait_s: float | None = None) -> Context:
    """Find the repository root from ``cwd`` (never assuming ``cwd`` is the root)."""
    wt = discover(cwd)
    return Context(wt, ReviewStore(wt.common_dir, lock_wait_s=lock_wait_s))


def lineage_id_for(identity: str) -> str:
    """``review-`` + the first 16 hex digits of the snapshot identity (generation 1)."""
    return "review-" + identity.removeprefix("sha256:")[:16]


def live_lineages(store: ReviewStore) -> list[Loaded]:
    """Valid, non-terminal lineages (a corrupt record is authority for nothing)."""
    return [x for x in store.scan() if isinstance(x, Loaded) and x.state.state not in TERMINAL]


def lineage_policy(ctx: Context, loaded: Loaded) -> LoadedPolicy:
    """The policy frozen in ``loaded`` (its raw bytes are stored with the lineage)."""
    from factory.review.policy import default_policy, parse_policy

    for path in ctx.store.blobs(loaded.lineage_id, POLICY_ROLE):
        raw = ctx.store.read_blob(loaded.lineage_id, POLICY_ROLE, path.name.split("-", 1)[1])
        policy = parse_policy(raw)
        if policy.hash == loaded.state.policy_hash:
            return policy
    builtin = default_policy()
    if builtin.hash == loaded.state.policy_hash:  # the same bytes, proven by their hash
        return builtin
    s = loaded.state
    stop = f"factory review finalize --lineage {s.lineage_id} --failed"
    exits = () if s.state in TERMINAL else (stop,)
    raise ReviewRefused(
        f"lineage {s.lineage_id} froze a policy whose bytes are missing from the store (its "
        "evidence/policy-* file was removed): nothing can derive its lenses again; review the "
        "candidate as a new lineage",
        code=POLICY_MISSING,
        next=(*exits, "factory review start"),
    )


def resolve_lineage(
    ctx: Context, lineage: str | None, *, policy: LoadedPolicy | None = None
) -> Loaded:
    """The lineage a command acts on: ``--lineage``, else the one live lineage, else the
    lineage of the checkout's current candidate.

    Raises:
        ReviewRefused: none or several match (naming ``--lineage`` / ``start``).
        ReviewRecordCorrupt: the chosen lineage's record is invalid.
    """
    if lineage is not None:
        return ctx.store.load(lineage)
    live = live_lineages(ctx.store)
    if len(live) == 1:
        return live[0]
    if len(live) > 1:
        ids = ", ".join(x.lineage_id for x in live)
        raise ReviewRefused(
            f"several review lineages are open ({ids})",
            code=LINEAGE_AMBIGUOUS,
            next=tuple(f"factory review show --lineage {x.lineage_id}" for x in live),
        )
    from factory.review.policy import load_policy
    from factory.review.snapshot import live_target, resolve_base

    kind, base = resolve_base(ctx.wt, None)
    target = live_target(ctx.wt, kind, base, policy or load_policy(None))
    derived = lineage_id_for(target.snapshot.identity)
    if ctx.store.exists(derived):
        return ctx.store.load(derived)
    raise ReviewRefused(
        "no review lineage is open for this checkout",
        code=LINEAGE_UNKNOWN,
        next=("factory review start", "factory review status"),
    )


def start(
    cwd: Path, *, base_ref: str | None, focus: LensName | None, policy_path: Path | None
) -> dict[str, Any]:
    """``factory review start``: freeze a new lineage, or resume the one of this snapshot.

    Raises:
        ReviewRefused: another live lineage exists for a different candidate, or the
            lineage of this snapshot was frozen with another focus or policy.
    """
    from factory.review.policy import load_policy
    from factory.review.risk import classify
    from factory.review.snapshot import live_target, resolve_base

    ctx = open_context(cwd)
    policy = load_policy(policy_path)
    kind, base = resolve_base(ctx.wt, base_ref)
    target = live_target(ctx.wt, kind, base, policy)
    lineage_id = lineage_id_for(target.snapshot.identity)
    if target.snapshot.candidate_tree == target.snapshot.base_tree:
        _nothing_to_review(ctx, base_ref)
    with ctx.store.locked("review/start"):
        if not ctx.store.exists(lineage_id):  # a recovered successor of this target?
            same = [
                x.lineage_id
                for x in live_lineages(ctx.store)
                if x.state.initial_snapshot.identity == target.snapshot.identity
            ]
            lineage_id = same[0] if same else lineage_id
        if ctx.store.exists(lineage_id):
            loaded = ctx.store.load(lineage_id)
            _same_frozen(loaded, focus, policy if policy_path is not None else None)
            return start_view(loaded, "resumed", target.golden)
        _no_other_live(ctx.store)
        op = machine.Create(
            lineage_id=lineage_id,
            policy_hash=policy.hash,
            focus=focus or DEFAULT_FOCUS,
            snapshot=target.snapshot,
            risk=classify(list(target.changes)),
            changed_lines=target.changed_lines,
        )
        state = machine.apply(None, op)
        committed = ctx.store.replace(
            None,
            state,
            command="review/start",
            seed_blobs={f"{POLICY_ROLE}": policy.raw},
        )
    return start_view(committed.loaded, "created", target.golden)


def _nothing_to_review(ctx: Context, base_ref: str | None) -> None:
    """An empty candidate is never frozen as a lineage: name the base that has a change."""
    from factory.review.bases import start_command

    suggested = start_command(ctx.wt)
    against = f"--base-ref {inert(base_ref)}" if base_ref else "HEAD"
    raise ReviewRefused(
        f"the checkout holds no change against {against}: there is nothing to review "
        "(a committed or rebased change is reviewed against the commit below it)",
        code=NOTHING_TO_REVIEW,
        next=tuple(dict.fromkeys((suggested, "factory review status"))),
    )


def _same_frozen(loaded: Loaded, focus: LensName | None, policy: LoadedPolicy | None) -> None:
    s = loaded.state
    wrong = []
    if focus is not None and focus != s.focus:
        wrong.append(f"--focus {focus} (frozen: {s.focus})")
    if policy is not None and policy.hash != s.policy_hash:
        wrong.append("--policy (a different policy was frozen)")
    if wrong:
        raise ReviewRefused(
            f"lineage {s.lineage_id} of this snapshot was started with other settings: "
            f"{'; '.join(wrong)} — its risk, lenses and budget are frozen",
            code=START_CONFLICT,
            next=machine.next_commands(s),
        )


def _no_other_live(store: ReviewStore) -> None:
    live = live_lineages(store)
    if not live:
        return
    other = live[0].state
    raise ReviewRefused(
        f"lineage {other.lineage_id} is still {other.state} for a different candidate",
        code=LIVE_LINEAGE_EXISTS,
        next=machine.next_commands(other),
    )


def status(cwd: Path) -> dict[str, Any]:
    """``factory review status``: every lineage, its state and next legal commands."""
    from factory.review.exits import exit_commands
    from factory.review.graph import build_graph

    ctx = open_context(cwd)
    items = ctx.store.scan()
    exits = exit_commands(ctx.store, build_graph(items))
    entries = [status_entry(x, exits.get(x.lineage_id)) for x in items]
    unreceipted = [e["next"][0] for e in entries if e.get("receipt") == "missing"]
    return {
        "operation": "review/status",
        "repository": str(ctx.wt.root),
        "store": str(ctx.store.root),
        "lineages": entries,
        "corrupt": sum(1 for x in items if isinstance(x, Corrupt)),
        "next": list(dict.fromkeys([*exits.values(), *unreceipted]))
        or ([nextcmd.validate(nextcmd.GATE_ORDER[0])] if items else ["factory review start"]),
    }


def review_check(cwd: Path, gate: GateName) -> GateResult:
    """The review check at ``gate`` for the repository containing ``cwd``, as a typed
    :class:`~factory.review.gates.result.GateResult` (what ``factory review validate
    --gate GATE`` prints). Other subsystems (the decision gate's ``review-gate`` evidence
    source) call this instead of running the command and parsing its output.

    Raises:
        FactoryError: a typed failure (git, the store lock, …), never a verdict.
    """
    from factory.review.gates.live import GateRequest
    from factory.review.gates.validate import check

    return check(cwd, GateRequest(gate=gate)).model()

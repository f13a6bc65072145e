"""The gate decision as pure functions of the store's graph and the live target (SPEC R).

:func:`decide` takes the facts of the recovery graph of a scan
(:class:`~factory.review.gates.facts.GraphFacts`), the lineage named by ``--lineage`` (or
None for discovery), what the gate derived from git (:class:`Live`) and a *base check* —
the one receipt-dependent derivation (does the live boundary keep the receipt's base?),
injected so this module runs no git — and returns a :class:`~factory.review.gates.result.
Verdict` plus the lineage it judged. Order, each step failing closed:

1. the authority: any record that does not validate, or a recovery graph that does not
   hold, stops discovery (``receipt-discovery/authority-corrupted``) and an explicit
   ``--lineage`` too (the graph cannot be trusted to say what is superseded); the lineage
   must be a valid, non-superseded leaf;
2. discovery without ``--lineage``: the unique terminal leaf whose final candidate tree is
   the live candidate (several: the one whose base is the live base), else ``missing``,
   ``scope-changed`` (the live change touches a reviewed path), ``unrelated`` or
   ``ambiguous``;
3. the lineage's state: not terminal, invalidated, receipt file missing, rehearsal-derived,
   or escalated (``escalated`` — no git comparison applies);
4. the binding: a derivation problem of the gate itself (empty commit, boundary
   unavailable, …), the candidate tree (``scope-changed``), the base (``invalidated``),
   pre-commit's staged tree, the paths;
5. allow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from factory.review import nextcmd
from factory.review.gates.facts import GraphFacts, LineageFacts
from factory.review.gates.verdict import GateName, Verdict, deny
from factory.review.names import TERMINAL

#: The receipt-dependent part of a gate's derivation: None when the live boundary keeps
#: the lineage's base, else the denial.
BaseCheck = Callable[[LineageFacts], Verdict | None]
#: Whether a git tree is git's stored representation of an approved raw tree
#: (``"same"``, ``"different"``, or ``"filtered"`` when only a filter program could say);
#: :func:`factory.review.gates.represent.comparer`. None: trees must be equal.
Same = Callable[[str, str], str]


@dataclass(frozen=True, slots=True)
class Live:
    """What a gate derived from git, before looking at any lineage."""

    gate: GateName
    kind: str
    natural_base: str | None
    candidate_tree: str
    paths: tuple[str, ...]
    head_commit: str | None
    head_tree: str | None
    staged_tree: str | None
    delivery: tuple[str, ...]
    problem: Verdict | None


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    chosen: LineageFacts | None
    considered: tuple[str, ...]


def _corrupt_next(graph: GraphFacts, exits: dict[str, str]) -> tuple[str, ...]:
    """The ceremony for each untrusted lineage (``exits``: lineage → its exit command, from
    :func:`factory.review.exits.exit_commands`)."""
    out = []
    for lid in sorted(graph.corrupt):
        out.append(exits.get(lid) or nextcmd.repair(lid, "invalid-record"))
    for lid in graph.problem_lineages:
        out.append(exits.get(lid) or nextcmd.repair(lid, "invalid-recovery-edge"))
    return tuple(dict.fromkeys(out)) or ("factory review status",)


def _authority(
    graph: GraphFacts, exits: dict[str, str], lineage: str | None, gate: str
) -> Verdict | None:
    if graph.corrupt or graph.problem_lineages:
        bad = sorted({*graph.corrupt, *graph.problem_lineages})
        what = f"{len(bad)} lineage(s) of the store cannot be trusted ({', '.join(bad[:3])})"
        code = "receipt-discovery/authority-corrupted"
        if lineage is not None:
            code = (
                "receipt-validation/corrupted"
                if lineage in graph.corrupt
                else ("receipt-validation/graph-invalid")
            )
        return deny(
            code,
            f"{what}: the recovery graph cannot say what is authority",
            *(_corrupt_next(graph, exits)),
        )
    if lineage is None:
        return None
    if lineage not in graph.valid:
        return deny(
            "receipt-validation/unknown-lineage",
            f"there is no review lineage {lineage}",
            "factory review status",
            nextcmd.validate(gate),
        )
    if graph.superseded(lineage):
        successors = graph.successor_of(lineage)
        problem = graph.superseded_why.get(lineage) or "superseded"
        return deny(
            "receipt-validation/superseded",
            problem,
            *(nextcmd.validate(gate, s) for s in successors),
        )
    return None


def _filtered(x: LineageFacts, live: Live) -> Verdict:
    return deny(
        "receipt-binding/filtered-representation",
        f"terminal: the {live.gate} tree {live.candidate_tree[:12]} stores, for a path lineage "
        f"{x.lineage_id} approved, the output of a clean filter the repository configures; "
        "factory never runs repository programs, so it cannot show that output is what was "
        "reviewed — a person decides (deliver without this gate, or drop the filter for the "
        "reviewed paths)",
        nextcmd.show(x.lineage_id),
        "factory review status",
    )


def _converted(
    receipted: list[LineageFacts], live: Live, same: Same | None
) -> tuple[list[LineageFacts], LineageFacts | None]:
    """Leaves whose approved raw tree git stores as the live tree, and the first leaf only a
    filter program could compare."""
    if same is None:
        return [], None
    answers = [(x, same(x.final_candidate, live.candidate_tree)) for x in receipted]
    filtered = next((x for x, a in answers if a == "filtered"), None)
    return [x for x, a in answers if a == "same"], filtered


def _discover(
    graph: GraphFacts, live: Live, same: Same | None = None
) -> tuple[LineageFacts | Verdict, tuple[str, ...]]:
    leaves = graph.leaves()
    receipted = [x for x in leaves if x.state in ("approved", "escalated")]
    considered = tuple(x.lineage_id for x in receipted)
    matches = [x for x in receipted if x.final_candidate == live.candidate_tree]
    if not matches:
        matches, filtered = _converted(receipted, live, same)
        if not matches and filtered is not None:
            return _filtered(filtered, live), considered
    if len(matches) > 1:
        same_base = [x for x in matches if x.initial_base == live.natural_base]
        matches = same_base if len(same_base) == 1 else matches
    if len(matches) == 1:
        return matches[0], considered
    if matches:
        ids = ", ".join(x.lineage_id for x in matches)
        return deny(
            "receipt-discovery/ambiguous",
            f"{len(matches)} terminal lineages cover this candidate tree ({ids})",
            *(nextcmd.validate(live.gate, x.lineage_id) for x in matches),
        ), considered
    open_ = [x for x in leaves if x.state not in TERMINAL]
    pending = [x for x in open_ if x.final_candidate == live.candidate_tree]
    if pending:
        s = pending[0]
        return deny(
            "receipt-discovery/missing",
            f"lineage {s.lineage_id} reviews this candidate but is still {s.state}",
            *s.next,
        ), considered
    touched = set(live.paths)
    overlap = [x for x in receipted if touched & set(x.genesis_paths)]
    if overlap:
        first = overlap[0]
        uncommitted = _uncommitted(overlap, live)
        if uncommitted is not None:
            return uncommitted, considered
        return deny(
            "receipt-discovery/scope-changed",
            f"the live change touches paths reviewed by {', '.join(x.lineage_id for x in overlap)}"
            " but no terminal lineage covers this candidate",
            *_scope_next(first),
        ), considered
    if receipted:
        return deny(
            "receipt-discovery/unrelated",
            f"the live change touches no path any terminal lineage reviewed "
            f"({len(receipted)} considered): it needs its own review",
            "factory review start",
        ), considered
    more = open_[0].next if open_ else ()
    return deny(
        "receipt-discovery/missing",
        "no terminal review receipt exists for this repository",
        *(more or ("factory review start",)),
    ), considered


def _uncommitted(overlap: list[LineageFacts], live: Live) -> Verdict | None:
    """A gate that judges HEAD's commit (pre-push, release) while an approved change still
    sits uncommitted on HEAD: recovering would be refused (the approval holds), so the
    next step is the commit, not a new lineage."""
    if live.gate not in ("pre-push", "release"):
        return None
    on_head = [x for x in overlap if x.state == "approved" and x.final_base == live.head_tree]
    if not on_head:
        return None
    return deny(
        "receipt-discovery/scope-changed",
        f"HEAD is the base lineage {on_head[0].lineage_id} approved a change on: that change "
        "is not committed yet, so HEAD's commit is not what was reviewed",
        nextcmd.validate("pre-commit"),
        "git commit",
        nextcmd.validate(live.gate),
    )


def _scope_next(x: LineageFacts) -> tuple[str, ...]:
    if x.state == "approved":
        return (nextcmd.recover(x.lineage_id, x.revision, "scope_changed"), "factory review start")
    return ("factory review start", nextcmd.show(x.lineage_id))


def _state_verdict(x: LineageFacts, gate: str) -> Verdict | None:
    lid = x.lineage_id
    if x.state not in TERMINAL:
        return deny(
            "receipt-validation/not-terminal",
            f"lineage {lid} is {x.state}: only a terminal lineage can authorize",
            *x.next,
        )
    if x.state == "invalidated":
        return deny(
            "receipt-validation/invalidated",
            f"lineage {lid} was invalidated",
            nextcmd.recover(lid, x.revision, "invalidated"),
        )
    if x.receipt != "ok":
        return deny(
            "receipt-validation/receipt-missing",
            f"lineage {lid} is {x.state} but its receipt file is missing",
            nextcmd.rewrite_receipt(lid),
        )
    if x.state == "escalated":
        why = x.escalation if x.escalation is not None else "escalated"
        return deny(
            "receipt-validation/escalated",
            f"lineage {lid} ended escalated ({why}): a person decides what happens next",
            nextcmd.recover(lid, x.revision, "escalated"),
            nextcmd.show(lid),
        )
    if x.rehearsal:
        return deny(
            "receipt-validation/rehearsal",
            f"lineage {lid} was approved on lens results from the REHEARSAL route (a scripted "
            "model): that proves the control path, not a review",
            nextcmd.recover(lid, x.revision, "invalidated"),
        )
    return None


def _binding(
    x: LineageFacts, live: Live, base_check: BaseCheck, same: Same | None = None
) -> Verdict:
    lid = x.lineage_id
    if live.problem is not None:
        return live.problem
    sameness = "different"
    if live.candidate_tree != x.final_candidate and same is not None:
        sameness = same(x.final_candidate, live.candidate_tree)
        if sameness == "filtered":
            return _filtered(x, live)
    if live.candidate_tree != x.final_candidate and sameness != "same":
        return deny(
            "receipt-binding/candidate-or-paths-mismatch",
            f"the live {live.gate} candidate tree {live.candidate_tree[:12]} is not the tree "
            f"{x.final_candidate[:12]} lineage {lid} approved",
            *_scope_next(x),
        )
    base = base_check(x)
    if base is not None:
        return base
    if live.staged_tree is not None and live.staged_tree not in (
        live.head_tree,
        x.final_candidate,
    ):
        return deny(
            "receipt-binding/staged-tree-mismatch",
            "the staged tree is neither HEAD's nor the approved candidate: only part of the "
            "candidate is staged, so the commit would not be what was reviewed",
            "git add -A",
            nextcmd.validate(live.gate),
        )
    # a tree git converted from the approved one: its paths are git's, not the raw snapshot's
    converted = live.candidate_tree != x.final_candidate
    if (
        not converted
        and live.natural_base == x.final_base
        and tuple(sorted(live.paths)) != x.final_paths
    ):
        return deny(
            "receipt-binding/candidate-or-paths-mismatch",
            "the live changed paths are not the approved candidate's",
            *_scope_next(x),
        )
    return Verdict(
        None,
        f"lineage {lid} (generation {x.generation}, approved) covers the live {live.gate} "
        f"target: tree {x.final_candidate[:12]} on base {x.final_base[:12]}",
        nextcmd.after_allow(live.gate),
    )


def _no_boundary(live: Live) -> bool:
    """The pre-pr boundary could not be selected (no such remote, no default branch, not
    fetched): there is no live change to look a lineage up by, so the denial says why
    rather than "no lineage touches this change"."""
    return live.problem is not None and (live.problem.denial or "").startswith(
        "boundary-selection/"
    )


def decide(
    graph: GraphFacts,
    exits: dict[str, str],
    lineage: str | None,
    live: Live,
    base_check: BaseCheck,
    same: Same | None = None,
) -> Decision:
    """The verdict of a gate (see the module docstring); ``exits`` names, for each lineage
    of an anomaly, the ceremony that takes it out of the store (``reclaim`` or ``repair``)."""
    problem = _authority(graph, exits, lineage, live.gate)
    if problem is not None:
        return Decision(problem, None, ())
    considered: tuple[str, ...] = ()
    if lineage is None and _no_boundary(live):
        assert live.problem is not None
        return Decision(live.problem, None, ())  # nothing to discover a lineage with
    if lineage is None:
        found, considered = _discover(graph, live, same)
        if isinstance(found, Verdict):
            return Decision(found, None, considered)
        chosen = found
    else:
        chosen = graph.valid[lineage]
    verdict = _state_verdict(chosen, live.gate) or _binding(chosen, live, base_check, same)
    return Decision(verdict, chosen, considered)

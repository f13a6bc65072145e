"""What a gate decision reads from the review store, as plain data (SPEC R).

:func:`~factory.review.gates.decide.decide` never looks at a whole
:class:`~factory.review.state.ReviewState`: it needs, per lineage, a handful of facts (its
state, generation, the reviewed base and the approved candidate, the genesis paths, the
next legal commands, whether the approval came from the rehearsal route) and, for the
store, which lineages are corrupt, superseded or on a broken recovery chain.
:func:`graph_facts` takes those facts from a fully validated
:class:`~factory.review.graph.LineageGraph`; :meth:`GraphFacts.to_json` /
:meth:`GraphFacts.from_json` carry them through the gate memo
(:mod:`factory.review.gates.memo`), so the hook path decides with the same function
without importing pydantic or a single model.

This module imports nothing that builds a model; the conversion functions import the
state modules only when called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from factory.review.graph import LineageGraph
    from factory.review.store import Loaded


@dataclass(frozen=True, slots=True)
class LineageFacts:
    """One valid lineage, as the gate decision sees it."""

    lineage_id: str
    revision: str
    receipt: str  # "ok" | "missing" | "none": the receipt file's status at load
    state: str
    generation: int
    kind: str  # the initial snapshot's kind (current-changes | base-diff)
    initial_base: str
    final_candidate: str
    final_base: str
    final_paths: tuple[str, ...]
    genesis_paths: tuple[str, ...]
    escalation: str | None  # the escalation's reason, when escalated
    rehearsal: bool  # approved on lens results of the rehearsal route
    next: tuple[str, ...]  # the legal next commands of the state
    receipt_json: dict[str, Any] | None  # the derived receipt (approved | escalated)


@dataclass(frozen=True)
class GraphFacts:
    """The store's lineages and what the recovery graph says about them."""

    valid: dict[str, LineageFacts]
    corrupt: tuple[str, ...]
    problem_lineages: tuple[str, ...]  # lineages carrying a graph problem, in graph order
    successors: dict[str, tuple[str, ...]]
    leaf_ids: tuple[str, ...]
    superseded_why: dict[str, str]  # the authority problem of each superseded lineage

    def superseded(self, lineage_id: str) -> bool:
        return bool(self.successors.get(lineage_id))

    def successor_of(self, lineage_id: str) -> tuple[str, ...]:
        return self.successors.get(lineage_id, ())

    def leaves(self) -> list[LineageFacts]:
        return [self.valid[lid] for lid in self.leaf_ids]

    def key(self) -> tuple[object, ...]:
        """What must not change between a decision and its final re-check."""
        return (
            tuple(sorted((k, v.revision, v.receipt) for k, v in self.valid.items())),
            self.corrupt,
            tuple(sorted(self.successors.items())),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": [_lineage_json(v) for _, v in sorted(self.valid.items())],
            "corrupt": list(self.corrupt),
            "problem_lineages": list(self.problem_lineages),
            "successors": {k: list(v) for k, v in sorted(self.successors.items())},
            "leaf_ids": list(self.leaf_ids),
            "superseded_why": dict(sorted(self.superseded_why.items())),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> GraphFacts:
        """The facts of :meth:`to_json` (raises KeyError/TypeError/ValueError on a bad doc)."""
        valid = {}
        for item in doc["valid"]:
            facts = LineageFacts(**{**item, **{k: tuple(item[k]) for k in _TUPLES}})
            valid[facts.lineage_id] = facts
        return cls(
            valid=valid,
            corrupt=tuple(doc["corrupt"]),
            problem_lineages=tuple(doc["problem_lineages"]),
            successors={k: tuple(v) for k, v in doc["successors"].items()},
            leaf_ids=tuple(doc["leaf_ids"]),
            superseded_why=dict(doc["superseded_why"]),
        )


_TUPLES = ("final_paths", "genesis_paths", "next")


def _lineage_json(v: LineageFacts) -> dict[str, Any]:
    out = {name: getattr(v, name) for name in LineageFacts.__slots__}
    return {k: list(x) if k in _TUPLES else x for k, x in out.items()}


def lineage_facts(x: Loaded) -> LineageFacts:
    """The facts of one validated lineage."""
    from factory.review.graph import rehearsal_approved
    from factory.review.machine import next_commands
    from factory.review.receipt import derive_receipt

    s = x.state
    receipt = derive_receipt(s) if s.state in ("approved", "escalated") else None
    return LineageFacts(
        lineage_id=x.lineage_id,
        revision=x.revision,
        receipt=x.receipt,
        state=s.state,
        generation=s.generation,
        kind=s.initial_snapshot.kind,
        initial_base=s.initial_snapshot.base_tree,
        final_candidate=s.current_snapshot.candidate_tree,
        final_base=s.current_snapshot.base_tree,
        final_paths=tuple(s.current_snapshot.paths),
        genesis_paths=tuple(s.genesis_paths),
        escalation=s.escalation.reason if s.escalation is not None else None,
        rehearsal=rehearsal_approved(s),
        next=tuple(next_commands(s)),
        receipt_json=receipt.to_json_value() if receipt is not None else None,
    )


def graph_facts(graph: LineageGraph) -> GraphFacts:
    """The facts of a graph built from a full scan (every record validated)."""
    valid = {lid: lineage_facts(x) for lid, x in graph.valid.items()}
    why = {}
    for lid in graph.valid:
        if graph.superseded(lid):
            why[lid] = graph.authority_problem(lid) or "superseded"
    return GraphFacts(
        valid=valid,
        corrupt=tuple(sorted(graph.corrupt)),
        problem_lineages=tuple(p.lineage_id for p in graph.problems),
        successors=dict(graph.successors),
        leaf_ids=tuple(x.lineage_id for x in graph.leaves()),
        superseded_why=why,
    )

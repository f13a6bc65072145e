"""The recovery graph of a store (SPEC R): which lineage a recovery superseded, and which
lineages may still be authority.

A recovered successor names its predecessor (lineage id and the exact revision it
replaced) in its state; the predecessor's bytes never change. :func:`build_graph` reads
those edges from a :meth:`~factory.review.store.ReviewStore.scan` and fails closed on every
edge that does not hold:

* ``dangling-predecessor`` — the named predecessor is not in the store;
* ``predecessor-corrupt`` — it is there but its record does not validate;
* ``predecessor-revision-mismatch`` — the predecessor is not at the revision recorded;
* ``generation-mismatch`` — the successor's generation is not the predecessor's + 1;
* ``disposition-mismatch`` — the recorded disposition does not fit the predecessor's state
  (``scope_changed`` needs an approved predecessor, ``invalidated`` an invalidated or a
  rehearsal-approved one, ``escalated`` an escalated one);
* ``fork`` — a predecessor with more than one successor (every member is affected);
* ``cycle`` — a chain of predecessors that returns to itself.

Only a *leaf* (a valid lineage nobody supersedes) whose whole chain is free of problems can
be discovered or pass a gate (:meth:`LineageGraph.authority_problem`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from factory.review.state import ReviewState
from factory.review.store import Corrupt, Loaded

ProblemKind = Literal[
    "dangling-predecessor",
    "predecessor-corrupt",
    "predecessor-revision-mismatch",
    "generation-mismatch",
    "disposition-mismatch",
    "fork",
    "cycle",
]


@dataclass(frozen=True, slots=True)
class GraphProblem:
    """One edge of the graph that does not hold, on the lineage that carries it."""

    lineage_id: str
    kind: ProblemKind
    detail: str


def rehearsal_approved(state: ReviewState) -> bool:
    """An approval whose lens judgement came (in part) from the scripted loopback model."""
    return state.state == "approved" and any(
        r.source.route == "rehearsal" for r in state.lens_results
    )


def disposition_fits(disposition: str, predecessor: ReviewState) -> bool:
    """Whether ``disposition`` may follow a predecessor in ``predecessor.state``."""
    if disposition == "scope_changed":
        return predecessor.state == "approved"
    if disposition == "invalidated":
        return predecessor.state == "invalidated" or rehearsal_approved(predecessor)
    return disposition == "escalated" and predecessor.state == "escalated"


@dataclass(frozen=True)
class LineageGraph:
    """The lineages of one store, their recovery edges and every problem found."""

    valid: dict[str, Loaded]
    corrupt: dict[str, Corrupt]
    successors: dict[str, tuple[str, ...]]
    problems: tuple[GraphProblem, ...]
    _broken: frozenset[str] = field(default=frozenset(), repr=False)

    def superseded(self, lineage_id: str) -> bool:
        """Whether a recovery names ``lineage_id`` as its predecessor."""
        return bool(self.successors.get(lineage_id))

    def successor_of(self, lineage_id: str) -> tuple[str, ...]:
        return self.successors.get(lineage_id, ())

    def problems_of(self, lineage_id: str) -> tuple[GraphProblem, ...]:
        return tuple(p for p in self.problems if p.lineage_id == lineage_id)

    def chain(self, lineage_id: str) -> tuple[str, ...]:
        """``lineage_id`` and its predecessors, leaf first (stops at a missing one)."""
        out: list[str] = []
        current: str | None = lineage_id
        while current is not None and current not in out:
            out.append(current)
            loaded = self.valid.get(current)
            pred = loaded.state.predecessor if loaded is not None else None
            current = pred.lineage_id if pred is not None else None
        return tuple(out)

    def leaves(self) -> list[Loaded]:
        """Valid lineages nobody supersedes and whose chain has no problem."""
        return [
            x
            for lid, x in sorted(self.valid.items())
            if not self.superseded(lid) and lid not in self._broken
        ]

    def authority_problem(self, lineage_id: str) -> str | None:
        """Why ``lineage_id`` cannot be authority by the graph (None when it can)."""
        if lineage_id in self.corrupt:
            return f"lineage {lineage_id} does not validate"
        if lineage_id not in self.valid:
            return f"there is no lineage {lineage_id}"
        if self.superseded(lineage_id):
            nxt = ", ".join(self.successor_of(lineage_id))
            return f"lineage {lineage_id} is superseded historical authority (by {nxt})"
        if lineage_id in self._broken:
            for member in self.chain(lineage_id):
                for p in self.problems_of(member):
                    return f"its recovery chain is invalid: {p.lineage_id}: {p.detail}"
            return f"lineage {lineage_id} is part of an invalid recovery graph"
        return None


def _edge_problems(
    loaded: Loaded, graph_valid: dict[str, Loaded], corrupt: set[str]
) -> list[GraphProblem]:
    s, lid = loaded.state, loaded.lineage_id
    pred = s.predecessor
    if pred is None:
        return []
    if pred.lineage_id in corrupt:
        return [
            GraphProblem(lid, "predecessor-corrupt", f"predecessor {pred.lineage_id} is corrupt")
        ]
    p = graph_valid.get(pred.lineage_id)
    if p is None:
        return [
            GraphProblem(lid, "dangling-predecessor", f"predecessor {pred.lineage_id} is missing")
        ]
    out = []
    if p.revision != pred.revision:
        out.append(
            GraphProblem(
                lid,
                "predecessor-revision-mismatch",
                f"predecessor {pred.lineage_id} is not at the revision this recovery replaced",
            )
        )
    if s.generation != p.state.generation + 1:
        out.append(GraphProblem(lid, "generation-mismatch", "generation is not predecessor's + 1"))
    if not disposition_fits(pred.disposition, p.state):
        out.append(
            GraphProblem(
                lid,
                "disposition-mismatch",
                f"disposition {pred.disposition} does not follow a {p.state.state} predecessor",
            )
        )
    return out


def _cycles(valid: dict[str, Loaded]) -> set[str]:
    on_cycle: set[str] = set()
    for start in valid:
        seen: list[str] = []
        current: str | None = start
        while current is not None and current in valid:
            if current in seen:
                on_cycle.update(seen[seen.index(current) :])
                break
            seen.append(current)
            pred = valid[current].state.predecessor
            current = pred.lineage_id if pred is not None else None
    return on_cycle


def build_graph(items: Iterable[Loaded | Corrupt]) -> LineageGraph:
    """The graph of a scan (see the module docstring)."""
    valid = {x.lineage_id: x for x in items if isinstance(x, Loaded)}
    corrupt = {x.lineage_id: x for x in items if isinstance(x, Corrupt)}
    problems: list[GraphProblem] = []
    succ: dict[str, list[str]] = {}
    for lid, loaded in sorted(valid.items()):
        problems += _edge_problems(loaded, valid, set(corrupt))
        pred = loaded.state.predecessor
        if pred is not None:
            succ.setdefault(pred.lineage_id, []).append(lid)
    for pred_id, children in sorted(succ.items()):
        if len(children) > 1:
            detail = f"{pred_id} has {len(children)} successors ({', '.join(children)})"
            problems += [GraphProblem(m, "fork", detail) for m in (pred_id, *children)]
    problems += [
        GraphProblem(lid, "cycle", "its predecessors lead back to it")
        for lid in sorted(_cycles(valid))
    ]
    bad = {p.lineage_id for p in problems}
    graph = LineageGraph(valid, corrupt, {k: tuple(v) for k, v in succ.items()}, tuple(problems))
    broken = frozenset(lid for lid in valid if bad & set(graph.chain(lid)))
    return LineageGraph(valid, corrupt, graph.successors, graph.problems, broken)

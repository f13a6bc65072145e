"""Strong Kleene logic and the requirement algebra ALL / ANY / QUORUM / NOT (SPEC G).

Truth values are the strings ``"true"``, ``"false"`` and ``"unknown"``. Every leaf is
evaluated and traced (no short-circuit), so a trace always names every obligation.

* ``ALL``: false if any item is false, else unknown if any is unknown, else true.
* ``ANY``: true if any item is true, else unknown if any is unknown, else false.
* ``NOT``: swaps true and false; unknown stays unknown.
* ``QUORUM(k of n)``: with t trues and u unknowns: k = 0 → true; t ≥ k → true;
  t + u < k → false; otherwise unknown.

A leaf may also be *failed* (an operational or integrity failure, never a truth value):
a law with a failed leaf evaluates to :data:`FAILED`, whatever the other leaves say, so a
failure is never laundered into unknown nor outvoted.

Shapes are checked when the scenario loads (:func:`parse`): no empty ALL/ANY, QUORUM with
0 ≤ k ≤ n, depth at most :data:`MAX_DEPTH`, and — for stage prerequisites and the
scenario completion law — no NOT, so those laws are monotone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from factory.gate.errors import SCENARIO_INVALID

TRUE, FALSE, UNKNOWN = "true", "false", "unknown"
FAILED = "failed"
Truth = Literal["true", "false", "unknown"]
Result = Literal["true", "false", "unknown", "failed"]
MAX_DEPTH = 32


def k_and(values: Iterable[str]) -> str:
    """Strong Kleene conjunction (empty → true)."""
    unknown = False
    for v in values:
        if v == FALSE:
            return FALSE
        if v == UNKNOWN:
            unknown = True
    return UNKNOWN if unknown else TRUE


def k_or(values: Iterable[str]) -> str:
    """Strong Kleene disjunction (empty → false)."""
    unknown = False
    for v in values:
        if v == TRUE:
            return TRUE
        if v == UNKNOWN:
            unknown = True
    return UNKNOWN if unknown else FALSE


def k_not(value: str) -> str:
    """Kleene negation."""
    return FALSE if value == TRUE else TRUE if value == FALSE else UNKNOWN


def quorum(k: int, values: Iterable[str]) -> str:
    """At least ``k`` of ``values`` true, in three values (see the module docstring)."""
    t = u = 0
    for v in values:
        if v == TRUE:
            t += 1
        elif v == UNKNOWN:
            u += 1
    if k <= 0 or t >= k:
        return TRUE
    if t + u < k:
        return FALSE
    return UNKNOWN


@dataclass(frozen=True, slots=True)
class Ref:
    """A leaf: the id of a condition (completion laws) or a stage (prerequisites)."""

    id: str


@dataclass(frozen=True, slots=True)
class All:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Quorum:
    k: int
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Node


Node = Union[Ref, All, AnyOf, Quorum, Not]  # noqa: UP007 - a runtime alias


def parse(raw: Any, where: str, *, allow_not: bool, depth: int = 1) -> Node:
    """Build a requirement from its scenario form; :data:`SCENARIO_INVALID` names ``where``.

    Forms: ``"id"``, ``{all = [...]}``, ``{any = [...]}``, ``{not = ...}``,
    ``{quorum = {k = 2, of = [...]}}``.
    """
    if depth > MAX_DEPTH:
        raise SCENARIO_INVALID(f"{where}: requirements nest at most {MAX_DEPTH} deep")
    if isinstance(raw, str):
        return Ref(raw)
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise SCENARIO_INVALID(f"{where}: a requirement is an id or one of all/any/quorum/not")
    ((op, body),) = raw.items()
    if op in ("all", "any"):
        items = _items(body, f"{where}.{op}", allow_not, depth)
        return All(items) if op == "all" else AnyOf(items)
    if op == "not":
        if not allow_not:
            raise SCENARIO_INVALID(f"{where}: NOT is not allowed here (this law must be monotone)")
        return Not(parse(body, f"{where}.not", allow_not=True, depth=depth + 1))
    if op == "quorum":
        if not isinstance(body, Mapping) or set(body) != {"k", "of"}:
            raise SCENARIO_INVALID(f"{where}.quorum: needs exactly k and of")
        items = _items(body["of"], f"{where}.quorum.of", allow_not, depth)
        k = body["k"]
        if len({repr(describe(i)) for i in items}) != len(items):
            raise SCENARIO_INVALID(
                f"{where}.quorum.of: an item is listed twice (it would count twice)"
            )
        if type(k) is not int or not 0 <= k <= len(items):
            raise SCENARIO_INVALID(f"{where}.quorum.k: an integer from 0 to {len(items)}")
        return Quorum(k, items)
    raise SCENARIO_INVALID(f"{where}: unknown operator {op!r} (all, any, quorum, not)")


def _items(body: Any, where: str, allow_not: bool, depth: int) -> tuple[Node, ...]:
    if not isinstance(body, list) or not body:
        raise SCENARIO_INVALID(f"{where}: a non-empty list (a vacuous law is refused)")
    return tuple(
        parse(item, f"{where}[{i}]", allow_not=allow_not, depth=depth + 1)
        for i, item in enumerate(body)
    )


def refs(node: Node) -> list[str]:
    """Every leaf id, in order (with repeats)."""
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Ref):
            out.append(item.id)
        elif isinstance(item, Not):
            stack.append(item.item)
        else:
            stack.extend(reversed(item.items))
    return out


def describe(node: Node) -> Any:
    """Normalised JSON form (part of the spec hash)."""
    if isinstance(node, Ref):
        return node.id
    if isinstance(node, Not):
        return {"not": describe(node.item)}
    if isinstance(node, Quorum):
        return {"quorum": {"k": node.k, "of": [describe(i) for i in node.items]}}
    return {"all" if isinstance(node, All) else "any": [describe(i) for i in node.items]}


def evaluate(node: Node, leaf: Callable[[str], str]) -> str:
    """The value of ``node`` with ``leaf(id)`` giving each leaf (every leaf is visited)."""
    if isinstance(node, Ref):
        return leaf(node.id)
    if isinstance(node, Not):
        inner = evaluate(node.item, leaf)
        return FAILED if inner == FAILED else k_not(inner)
    values = [evaluate(item, leaf) for item in node.items]
    if FAILED in values:
        return FAILED
    if isinstance(node, All):
        return k_and(values)
    if isinstance(node, AnyOf):
        return k_or(values)
    return quorum(node.k, values)


def trace(node: Node, leaf: Callable[[str], str]) -> tuple[str, dict[str, Any]]:
    """Like :func:`evaluate`, also returning the node-by-node trace as JSON."""
    if isinstance(node, Ref):
        value = leaf(node.id)
        return value, {"ref": node.id, "result": value}
    if isinstance(node, Not):
        inner, sub = trace(node.item, leaf)
        value = FAILED if inner == FAILED else k_not(inner)
        return value, {"op": "not", "result": value, "items": [sub]}
    pairs = [trace(item, leaf) for item in node.items]
    values = [v for v, _ in pairs]
    if FAILED in values:
        value = FAILED
    elif isinstance(node, All):
        value = k_and(values)
    elif isinstance(node, AnyOf):
        value = k_or(values)
    else:
        value = quorum(node.k, values)
    out: dict[str, Any] = {"op": _op(node), "result": value, "items": [s for _, s in pairs]}
    if isinstance(node, Quorum):
        out["k"] = node.k
    return value, out


def _op(node: Node) -> str:
    return "all" if isinstance(node, All) else "any" if isinstance(node, AnyOf) else "quorum"


def holds(node: Node, done: Mapping[str, bool] | set[str] | frozenset[str]) -> bool:
    """A monotone law (no NOT) over a set of completed ids: true or false, never unknown."""
    return evaluate(node, lambda i: TRUE if i in done else FALSE) == TRUE

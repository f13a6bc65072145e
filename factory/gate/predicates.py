"""Predicates legal per domain, checked when the scenario loads (SPEC G).

=================  ==========================  ===========================================
predicate          domains                     operand
=================  ==========================  ===========================================
``exists``         every domain                none: true when a value is present
``not_exists``     every domain                none: true when absence was observed
``equals``         every domain                a member of the domain
``not_equals``     every domain                a member of the domain
``lt le gt ge``    integer, decimal, string    a member; strings order by code point,
                   (code points), date,        instants as instants; a date never meets
                   instant                     an instant (that is a load error)
``in``             scalar domains              a non-empty array of members
``contains``       string                      a string: substring (``""`` is in every
                                               string)
``contains``       set                         one element: membership
``contains_all``   set                         an array of elements: subset (``[]`` holds)
=================  ==========================  ===========================================

:func:`check` compiles (predicate, domain, raw operand) into a :class:`Predicate` or raises
:data:`SCENARIO_INVALID`; :meth:`Predicate.test` then answers ``True``/``False`` for a present
value, or ``None`` (unknown) when a null meets an ordering.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from factory.gate.errors import SCENARIO_INVALID
from factory.gate.values import SCALAR_KINDS, Domain, OutsideDomain, coerce, encode

PRESENCE = frozenset({"exists", "not_exists"})
ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
NAMES = (
    "exists",
    "not_exists",
    "equals",
    "not_equals",
    *ORDERING,
    "in",
    "contains",
    "contains_all",
)


@dataclass(frozen=True, slots=True)
class Predicate:
    """A predicate bound to its domain and typed operand."""

    name: str
    domain: Domain
    operand: Any = None

    def test(self, value: Any) -> bool | None:
        """Apply to a present typed value: True, False, or None (unknown)."""
        name = self.name
        if name == "exists":
            return True
        if name == "not_exists":
            return False
        if name == "equals":
            return bool(value == self.operand)
        if name == "not_equals":
            return bool(value != self.operand)
        if value is None:
            return None  # a null has no order, no members, no substrings
        if name in ORDERING:
            return ORDERING[name](value, self.operand)
        if name == "in":
            return value in self.operand
        if name == "contains":
            return self.operand in value
        return bool(self.operand <= value)  # contains_all: subset of the observed set

    def describe(self) -> dict[str, Any]:
        """Normalised JSON form (part of the spec hash)."""
        out: dict[str, Any] = {"name": self.name}
        if self.name in PRESENCE:
            return out
        if self.name == "in":
            out["operand"] = sorted((encode(self.domain, v) for v in self.operand), key=str)
        elif self.name == "contains" and self.domain.kind == "set":
            assert self.domain.of is not None
            out["operand"] = encode(self.domain.of, self.operand)
        elif self.name == "contains_all":
            out["operand"] = encode(self.domain, self.operand)
        elif self.name == "contains":
            out["operand"] = self.operand
        else:
            out["operand"] = encode(self.domain, self.operand)
        return out


def check(name: Any, domain: Domain, operand: Any, *, has_operand: bool) -> Predicate:
    """Compile a predicate for ``domain``; :data:`SCENARIO_INVALID` says what is illegal."""
    if name not in NAMES:
        raise SCENARIO_INVALID(f"predicate must be one of {', '.join(NAMES)}")
    if name in PRESENCE:
        if has_operand:
            raise SCENARIO_INVALID(f"{name} takes no operand")
        return Predicate(name, domain)
    if not has_operand:
        raise SCENARIO_INVALID(f"{name} needs an operand")
    kind = domain.kind
    try:
        if name in ("equals", "not_equals"):
            return Predicate(name, domain, coerce(domain, operand))
        if name in ORDERING:
            if not domain.ordered:
                raise SCENARIO_INVALID(f"{name} needs an ordered domain; {kind} has no order")
            return Predicate(name, domain, coerce(_not_null(domain), operand))
        if name == "in":
            return _in(domain, operand)
        if name == "contains":
            if kind == "string":
                return Predicate(name, domain, coerce(_not_null(domain), operand))
            if kind == "set":
                assert domain.of is not None
                return Predicate(name, domain, coerce(domain.of, operand))
            raise SCENARIO_INVALID(
                f"contains applies to string (substring) or set (membership), not {kind}"
            )
        if kind != "set":
            raise SCENARIO_INVALID(f"contains_all applies to sets, not {kind}")
        return Predicate(name, domain, coerce(_not_null(domain), operand))
    except OutsideDomain as exc:
        raise SCENARIO_INVALID(f"operand is not a {kind}: {exc}") from None


def _not_null(domain: Domain) -> Domain:
    """The same domain without null: an ordering or containment operand cannot be null."""
    if not domain.nullable:
        return domain
    return Domain(
        domain.kind,
        False,
        max_length=domain.max_length,
        of=domain.of,
        fields=domain.fields,
        optional=domain.optional,
    )


def _in(domain: Domain, operand: Any) -> Predicate:
    if domain.kind not in SCALAR_KINDS:
        raise SCENARIO_INVALID(f"in applies to scalar domains, not {domain.kind}")
    if not isinstance(operand, list) or not operand:
        raise SCENARIO_INVALID("in needs a non-empty array of members (an empty set is never met)")
    return Predicate("in", domain, frozenset(coerce(domain, item) for item in operand))

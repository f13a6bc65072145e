"""The scenario model ``factory.gate-scenario/1``, loaded from TOML or JSON and validated at
load (SPEC G).

A scenario declares its run parameters, the public keys evidence may be signed with, the
conditions (domain, predicate, operand, evidence policy, and separately the acquisition
binding), the stages (a prerequisite law over stage ids, a completion law over conditions,
intents) and the scenario's own completion law over completed stages.

Everything is checked at load, before any run exists — the document's shape by its model
(:mod:`factory.gate.scenario_doc`), the rest by :mod:`factory.gate.scenario_parse`:
closed domains, legal predicates and operands, unique ids, every reference resolved, an
acyclic stage graph, monotone prerequisite and completion laws, parameters used by
policies and bindings declared.
The semantics are then fixed: :attr:`Scenario.spec` is the normalised JSON form and
:attr:`Scenario.spec_hash` its domain-separated digest.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from typing import Any

from factory.documents.reading import JsonRefused, read_json
from factory.gate import logic
from factory.gate.errors import SCENARIO_INVALID, SCENARIO_UNKNOWN, ScenarioInvalid
from factory.gate.predicates import Predicate
from factory.gate.values import Domain

SCHEMA = "factory.gate-scenario/1"
SPEC_TAG = "factory.gate-scenario/1"
MAX_SCENARIO_BYTES = 8 << 20
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
INGRESS = ("submitted", "acquired")
SCOPE_KINDS = ("tree", "commit", "repository", "file", "none")


@dataclass(frozen=True, slots=True)
class Policy:
    """Which evidence facets a condition accepts (every field narrows; none widens)."""

    ingress: frozenset[str] = frozenset(INGRESS)
    producers: tuple[str, ...] = ()  # exact names, or a prefix ending in "*"; () = any
    scope_kind: str | None = None
    scope_param: str | None = None
    scope_value: str | None = None
    independent: bool = False
    max_age_ns: int | None = None
    signed_by: frozenset[str] = frozenset()

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ingress": sorted(self.ingress), "producers": list(self.producers)}
        if self.scope_kind is not None:
            out["scope"] = {"kind": self.scope_kind, "param": self.scope_param}
            if self.scope_value is not None:
                out["scope"] = {"kind": self.scope_kind, "value": self.scope_value}
        out["independent"] = self.independent
        if self.max_age_ns is not None:
            out["max_age_ns"] = str(self.max_age_ns)
        out["signed_by"] = sorted(self.signed_by)
        return out


@dataclass(frozen=True, slots=True)
class Binding:
    """How an observation for a condition can be acquired (separate from its meaning)."""

    provider: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Condition:
    id: str
    domain: Domain
    predicate: Predicate
    universe: str | None
    policy: Policy
    acquire: Binding | None


@dataclass(frozen=True, slots=True)
class Intent:
    """An effect an accepted mutation makes eligible for dispatch (never performed here)."""

    kind: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Stage:
    id: str
    after: logic.Node | None
    complete: logic.Node
    intents: tuple[Intent, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario. ``order`` lists stage ids in a topological order."""

    id: str
    description: str
    params: tuple[str, ...]
    keys: Mapping[str, bytes]
    conditions: Mapping[str, Condition]
    stages: Mapping[str, Stage]
    order: tuple[str, ...]
    completion: logic.Node
    completion_intents: tuple[Intent, ...]
    spec: dict[str, Any]
    spec_hash: str
    source: bytes
    source_format: str


def load_bytes(data: bytes, fmt: str) -> Scenario:
    """Parse and validate a scenario document (``fmt`` is ``toml`` or ``json``)."""
    if len(data) > MAX_SCENARIO_BYTES:
        raise SCENARIO_INVALID(f"the scenario is larger than {MAX_SCENARIO_BYTES} bytes")
    try:
        if fmt == "toml":
            raw = tomllib.loads(data.decode("utf-8"), parse_float=Decimal)
        elif fmt == "json":
            raw = read_json(
                data, limit=MAX_SCENARIO_BYTES, max_depth=64, decimals=True, lone_surrogates=True
            )
        else:
            raise SCENARIO_INVALID(f"unknown scenario format {fmt!r}; use .toml or .json")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, JsonRefused) as exc:
        raise SCENARIO_INVALID(f"the scenario does not parse as {fmt}: {exc}") from exc
    from factory.gate.scenario_parse import build  # it builds this module's types

    try:
        return build(raw, data, fmt)
    except ScenarioInvalid as exc:
        raise SCENARIO_INVALID(f"the scenario is invalid: {exc.fact}") from exc
    except ValueError as exc:  # one no check foresaw still names the scenario
        raise SCENARIO_INVALID(f"the scenario is invalid: {exc}") from exc


def builtin_names() -> list[str]:
    """Names of the scenarios shipped in ``factory/gate/scenarios/``."""
    folder = resources.files("factory.gate") / "scenarios"
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def builtin_source(name: str) -> bytes:
    """The bytes of a shipped scenario; :class:`UnknownScenario` when there is none."""
    if name not in builtin_names():
        known = ", ".join(builtin_names()) or "none"
        raise SCENARIO_UNKNOWN(f"no built-in scenario {name!r} (built-in: {known})")
    return (resources.files("factory.gate") / "scenarios" / f"{name}.toml").read_bytes()


def load_builtin(name: str) -> Scenario:
    return load_bytes(builtin_source(name), "toml")

"""Builders for gate tests: scenarios as JSON values, observation documents, runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factory.gate.evidence import Evidence, admit
from factory.gate.scenario import Scenario, load_bytes
from factory.gate.service import Gate, LoadedRun
from factory.gate.store import SqliteStore
from factory.gate.values import parse_instant

T0 = "2026-01-01T00:00:00Z"
NOW = parse_instant("2026-01-01T00:10:00Z")


def condition(
    cid: str, kind: str = "integer", predicate: str = "equals", operand: Any = 0, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": cid, "domain": {"kind": kind}, "predicate": predicate}
    if operand is not ...:
        out["operand"] = operand
    out.update(extra)
    return out


def scenario_doc(
    conditions: list[dict[str, Any]],
    stages: list[dict[str, Any]] | None = None,
    completion: Any = None,
    params: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    stages = stages or [{"id": "s", "complete": {"all": [c["id"] for c in conditions]}}]
    doc = {
        "schema": "factory.gate-scenario/1",
        "id": "t",
        "params": params or [],
        "conditions": conditions,
        "stages": stages,
        "completion": {"law": completion or {"all": [s["id"] for s in stages]}},
    }
    doc.update(extra)
    return doc


def scenario(*args: Any, **kwargs: Any) -> Scenario:
    return load_bytes(json.dumps(scenario_doc(*args, **kwargs)).encode(), "json")


def observation(
    cond: str,
    value: Any = None,
    *,
    absent: str | None = None,
    complete: bool = True,
    failure: dict[str, str] | None = None,
    **facets: Any,
) -> bytes:
    if failure is not None:
        obs: dict[str, Any] = {"failure": failure}
    elif absent is not None:
        obs = {"absent": {"universe": absent, "complete": complete}}
    else:
        obs = {"value": value}
    doc = {
        "schema": "factory.gate-observation/1",
        "condition": cond,
        "ingress": "submitted",
        "producer": "ci",
        "content_type": "application/json",
        "scope": {"kind": "none"},
        "observed_at": T0,
        "observation": obs,
    }
    doc.update(facets)
    return json.dumps(doc).encode()


def raw_observation(cond: str, value_json: str, **facets: Any) -> bytes:
    """An observation whose value is given as literal JSON text (e.g. ``1.0``, ``1e0``)."""
    marker = "__VALUE__"
    text = observation(cond, marker, **facets).decode()
    return text.replace(json.dumps(marker), value_json).encode()


def evidence(
    sc: Scenario, eid: str, payload: bytes, ingress: str = "submitted", **kw: Any
) -> Evidence:
    return admit(eid, payload, conditions=sc.conditions, ingress=ingress, **kw)


def new_gate(tmp_path: Path, clock_ns: int = NOW) -> Gate:
    return Gate(SqliteStore(tmp_path / "gate.sqlite3"), clock=lambda: clock_ns)


def started(
    gate: Gate, sc: Scenario, params: dict[str, str] | None = None, run: str = "r1"
) -> LoadedRun:
    loaded, _ = gate.start(run, sc, params or {})
    return loaded


def two_stages() -> Scenario:
    """Stage ``a`` (condition ``c1``, at most an hour old) then ``b`` (``c2``)."""
    stages = [{"id": "a", "complete": "c1"}, {"id": "b", "after": "a", "complete": "c2"}]
    return scenario(
        [condition("c1", policy={"max_age_s": 3600}), condition("c2")], stages, completion="b"
    )

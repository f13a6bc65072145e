"""A decoded ``factory.gate-scenario/1`` document into a
:class:`~factory.gate.scenario.Scenario` (SPEC G).

The document's shape is its model (:class:`factory.gate.scenario_doc.ScenarioDoc`); here
are the checks that need the whole document — unique ids, every reference resolved, an
acyclic stage graph, monotone laws, declared parameters and keys, legal domains,
predicates, operands and bindings — and the normalised ``spec`` whose digest is the
scenario's ``spec_hash``.

Every check here, in the model's reader and in the parsers of laws, domains, predicates
and bindings raises ``SCENARIO_INVALID(fact)`` naming where;
:func:`factory.gate.scenario.load_bytes` says once that the scenario is invalid.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from factory.documents.canonical import digest
from factory.gate import logic
from factory.gate.acquire_args import check_binding
from factory.gate.errors import SCENARIO_INVALID, ScenarioInvalid
from factory.gate.predicates import check
from factory.gate.scenario import (
    SCHEMA,
    SPEC_TAG,
    Binding,
    Condition,
    Intent,
    Policy,
    Scenario,
    Stage,
)
from factory.gate.scenario_doc import (
    ConditionDoc,
    IntentDoc,
    PolicyDoc,
    StageDoc,
    parse_scenario_doc,
)
from factory.gate.values import parse_domain


def build(raw: Any, source: bytes, fmt: str) -> Scenario:
    """The validated scenario of a decoded document.

    Raises:
        ScenarioInvalid: the document's shape (:func:`parse_scenario_doc`), a law, domain,
            predicate or binding, or a check over the whole document is wrong; the fact
            names where.
    """
    doc = parse_scenario_doc(raw)
    params = tuple(doc.params)
    if len(set(params)) != len(params):
        raise SCENARIO_INVALID("params: a name is listed twice")
    keys = {key_id: base64.b64decode(key.ed25519) for key_id, key in doc.keys.items()}
    conditions: dict[str, Condition] = {}
    for index, item in enumerate(doc.conditions):
        if item.id in conditions:
            raise SCENARIO_INVALID(f"conditions[{index}].id: {item.id!r} is declared twice")
        conditions[item.id] = _condition(item, params, keys)
    stages = _stages(doc.stages, conditions)
    order = _topological(stages)
    completion = logic.parse(doc.completion.law, "completion.law", allow_not=False)
    _resolve(completion, stages, "completion.law", "stage")
    intents = _intents(doc.completion.intents)
    spec = _spec(doc.id, params, keys, conditions, stages, order, completion, intents)
    return Scenario(
        doc.id, doc.description, params, keys, conditions, stages, order, completion, intents,
        spec, digest(SPEC_TAG, spec), source, fmt,
    )  # fmt: skip


_OPEN = PolicyDoc()


def _condition(item: ConditionDoc, params: tuple[str, ...], keys: Mapping[str, bytes]) -> Condition:
    where = f"condition {item.id}"
    domain = parse_domain(item.domain, f"{where}.domain")
    has_operand = "operand" in item.model_fields_set
    try:
        predicate = check(item.predicate, domain, item.operand, has_operand=has_operand)
    except ScenarioInvalid as exc:
        raise SCENARIO_INVALID(f"{where}.predicate: {exc.fact}") from None
    policy = _policy(item.policy or _OPEN, f"{where}.policy", params, keys)
    binding = None
    if item.acquire is not None:
        args = item.acquire.args
        check_binding(item.acquire.provider, args, params, f"{where}.acquire")
        binding = Binding(item.acquire.provider, args)
    return Condition(item.id, domain, predicate, item.universe, policy, binding)


def _policy(
    doc: PolicyDoc, where: str, params: tuple[str, ...], keys: Mapping[str, bytes]
) -> Policy:
    scope = doc.scope
    if scope is not None and scope.param is not None and scope.param not in params:
        raise SCENARIO_INVALID(f"{where}.scope.param: {scope.param!r} is not declared in params")
    if doc.independent and "actor" not in params:
        raise SCENARIO_INVALID(f"{where}.independent: the scenario must declare the param 'actor'")
    if not set(doc.signed_by) <= set(keys):
        raise SCENARIO_INVALID(f"{where}.signed_by: key ids declared under [keys]")
    max_age = None if doc.max_age_s is None else doc.max_age_s * 1_000_000_000
    return Policy(
        frozenset(doc.ingress), tuple(doc.producers),
        None if scope is None else scope.kind, None if scope is None else scope.param,
        None if scope is None else scope.value, doc.independent, max_age, frozenset(doc.signed_by),
    )  # fmt: skip


def _stages(items: list[StageDoc], conditions: Mapping[str, Condition]) -> dict[str, Stage]:
    out: dict[str, Stage] = {}
    for index, item in enumerate(items):
        sid = item.id
        if sid in out:
            raise SCENARIO_INVALID(f"stages[{index}].id: {sid!r} is declared twice")
        after = None
        if "after" in item.model_fields_set:
            after = logic.parse(item.after, f"stage {sid}.after", allow_not=False)
        complete = logic.parse(item.complete, f"stage {sid}.complete", allow_not=True)
        _resolve(complete, conditions, f"stage {sid}.complete", "condition")
        out[sid] = Stage(sid, after, complete, _intents(item.intents))
    for stage in out.values():
        if stage.after is not None:
            _resolve(stage.after, out, f"stage {stage.id}.after", "stage")
            if stage.id in logic.refs(stage.after):
                raise SCENARIO_INVALID(f"stage {stage.id}.after: a stage cannot wait for itself")
    return out


def _resolve(node: logic.Node, known: Mapping[str, Any], where: str, what: str) -> None:
    for ref in logic.refs(node):
        if ref not in known:
            raise SCENARIO_INVALID(f"{where}: {ref!r} is not a declared {what}")


def _intents(items: list[IntentDoc]) -> tuple[Intent, ...]:
    return tuple(Intent(item.kind, item.detail) for item in items)


def _topological(stages: Mapping[str, Stage]) -> tuple[str, ...]:
    """Kahn's algorithm in declaration order; a cycle is a load error naming a stage."""
    deps = {sid: set(logic.refs(s.after)) if s.after else set() for sid, s in stages.items()}
    order: list[str] = []
    placed: set[str] = set()
    remaining = list(stages)
    while remaining:
        ready = [sid for sid in remaining if deps[sid] <= placed]
        if not ready:
            raise SCENARIO_INVALID(
                f"stages: the prerequisite graph has a cycle through {remaining[0]!r}"
            )
        order.extend(ready)
        placed.update(ready)
        remaining = [sid for sid in remaining if sid not in placed]
    return tuple(order)


def _spec(
    sid: str,
    params: tuple[str, ...],
    keys: Mapping[str, bytes],
    conditions: Mapping[str, Condition],
    stages: Mapping[str, Stage],
    order: tuple[str, ...],
    completion: logic.Node,
    intents: tuple[Intent, ...],
) -> dict[str, Any]:
    def intent_list(items: tuple[Intent, ...]) -> list[dict[str, Any]]:
        return [{"kind": i.kind, "detail": i.detail} for i in items]

    return {
        "schema": SCHEMA,
        "id": sid,
        "params": list(params),
        "keys": {k: base64.b64encode(v).decode("ascii") for k, v in sorted(keys.items())},
        "conditions": [
            {
                "id": c.id,
                "domain": c.domain.describe(),
                "predicate": c.predicate.describe(),
                "universe": c.universe,
                "policy": c.policy.describe(),
                "acquire": None
                if c.acquire is None
                else {"provider": c.acquire.provider, "args": _plain(c.acquire.args)},
            }
            for c in conditions.values()
        ],
        "stages": [
            {
                "id": s.id,
                "after": None if s.after is None else logic.describe(s.after),
                "complete": logic.describe(s.complete),
                "intents": intent_list(s.intents),
            }
            for s in (stages[sid] for sid in order)
        ],
        "completion": {"law": logic.describe(completion), "intents": intent_list(intents)},
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

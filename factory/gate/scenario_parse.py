"""Validation of a decoded ``factory.gate-scenario/1`` document into a
:class:`~factory.gate.scenario.Scenario` (SPEC G): the checks listed in
:mod:`factory.gate.scenario` — closed domains, legal predicates and operands, unique ids,
every reference resolved, an acyclic stage graph, monotone laws, declared parameters — and
the normalised ``spec`` whose digest is the scenario's ``spec_hash``.

Every problem is a ``ValueError`` naming where it is; :func:`factory.gate.scenario.load_bytes`
turns it into ``scenario-invalid``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from factory.canonical import digest
from factory.gate import logic
from factory.gate.acquire_args import check_binding
from factory.gate.predicates import check
from factory.gate.scenario import (
    ID,
    INGRESS,
    SCHEMA,
    SCOPE_KINDS,
    SPEC_TAG,
    Binding,
    Condition,
    Intent,
    Policy,
    Scenario,
    Stage,
)
from factory.gate.values import parse_domain

_TOP = {"schema", "id", "description", "params", "keys", "conditions", "stages", "completion"}
_COND = {"id", "description", "domain", "predicate", "operand", "universe", "policy", "acquire"}
_STAGE = {"id", "description", "after", "complete", "intents"}
_POLICY = {"ingress", "producers", "scope", "independent", "max_age_s", "signed_by"}


def build(raw: Any, source: bytes, fmt: str) -> Scenario:
    """The validated scenario of a decoded document; ``ValueError`` says what is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError("the document is not a table/object")
    _keys_only(raw, _TOP, "(top)")
    if raw.get("schema") != SCHEMA:
        raise ValueError(f"schema must be {SCHEMA!r}")
    sid = _id(raw.get("id"), "id")
    description = _text(raw.get("description", ""), "description")
    params = _params(raw.get("params", []))
    keys = _public_keys(raw.get("keys", {}))
    conditions = _conditions(raw.get("conditions"), params, keys)
    stages = _stages(raw.get("stages"), conditions)
    order = _topological(stages)
    completion_raw = raw.get("completion")
    if not isinstance(completion_raw, Mapping):
        raise ValueError("completion: a table with a law over stage ids (all/any/quorum)")
    _keys_only(completion_raw, {"law", "intents"}, "completion")
    completion = logic.parse(completion_raw.get("law"), "completion.law", allow_not=False)
    _resolve(completion, stages, "completion.law", "stage")
    intents = _intents(completion_raw.get("intents", []), "completion.intents")
    spec = _spec(sid, params, keys, conditions, stages, order, completion, intents)
    return Scenario(
        sid, description, params, keys, conditions, stages, order, completion, intents,
        spec, digest(SPEC_TAG, spec), source, fmt,
    )  # fmt: skip


def _keys_only(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise ValueError(f"{where}: unknown key {extra[0]!r}")


def _id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise ValueError(f"{where}: an id of letters, digits, '_', '.', '-' (at most 128)")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > 4096:
        raise ValueError(f"{where}: a string of at most 4096 characters")
    return value


def _params(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise ValueError("params: a list of parameter names")
    names = [_id(p, f"params[{i}]") for i, p in enumerate(raw)]
    if len(set(names)) != len(names):
        raise ValueError("params: a name is listed twice")
    return tuple(names)


def _public_keys(raw: Any) -> dict[str, bytes]:
    if not isinstance(raw, Mapping):
        raise ValueError('keys: a table of key id = { ed25519 = "<base64 raw public key>" }')
    out: dict[str, bytes] = {}
    for key_id, body in raw.items():
        _id(key_id, f"keys.{key_id}")
        if not isinstance(body, Mapping) or set(body) != {"ed25519"}:
            raise ValueError(f'keys.{key_id}: exactly {{ ed25519 = "<base64>" }}')
        try:
            key = base64.b64decode(str(body["ed25519"]), validate=True)
        except binascii.Error as exc:
            raise ValueError(f"keys.{key_id}: not base64") from exc
        if len(key) != 32:
            raise ValueError(f"keys.{key_id}: an Ed25519 public key is 32 bytes")
        out[key_id] = key
    return out


def _conditions(
    raw: Any, params: tuple[str, ...], keys: Mapping[str, bytes]
) -> dict[str, Condition]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("conditions: a non-empty list ([[conditions]] tables)")
    out: dict[str, Condition] = {}
    for index, item in enumerate(raw):
        cond = _condition(item, f"conditions[{index}]", params, keys)
        if cond.id in out:
            raise ValueError(f"conditions[{index}].id: {cond.id!r} is declared twice")
        out[cond.id] = cond
    return out


def _condition(
    raw: Any, where: str, params: tuple[str, ...], keys: Mapping[str, bytes]
) -> Condition:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a table")
    _keys_only(raw, _COND, where)
    cid = _id(raw.get("id"), f"{where}.id")
    where = f"condition {cid}"
    domain = parse_domain(raw.get("domain"), f"{where}.domain")
    try:
        predicate = check(
            raw.get("predicate"), domain, raw.get("operand"), has_operand="operand" in raw
        )
    except ValueError as exc:
        raise ValueError(f"{where}.predicate: {exc}") from None
    universe = raw.get("universe")
    if universe is not None:
        _id(universe, f"{where}.universe")
    policy = _policy(raw.get("policy", {}), f"{where}.policy", params, keys)
    binding = None
    if "acquire" in raw:
        acquire = raw["acquire"]
        if not isinstance(acquire, Mapping) or not isinstance(acquire.get("provider"), str):
            raise ValueError(f'{where}.acquire: a table with provider = "..."')
        args = {k: v for k, v in acquire.items() if k != "provider"}
        check_binding(acquire["provider"], args, params, f"{where}.acquire")
        binding = Binding(acquire["provider"], args)
    return Condition(cid, domain, predicate, universe, policy, binding)


def _policy(raw: Any, where: str, params: tuple[str, ...], keys: Mapping[str, bytes]) -> Policy:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a table")
    _keys_only(raw, _POLICY, where)
    ingress = raw.get("ingress", list(INGRESS))
    if not isinstance(ingress, list) or not ingress or not set(ingress) <= set(INGRESS):
        raise ValueError(f"{where}.ingress: a non-empty list of submitted / acquired")
    producers = raw.get("producers", [])
    if not isinstance(producers, list) or not all(isinstance(p, str) and p for p in producers):
        raise ValueError(f"{where}.producers: a list of producer names (a trailing * is a prefix)")
    scope_kind = scope_param = scope_value = None
    if "scope" in raw:
        scope_kind, scope_param, scope_value = _scope(raw["scope"], f"{where}.scope", params)
    independent = raw.get("independent", False)
    if not isinstance(independent, bool):
        raise ValueError(f"{where}.independent: true or false")
    if independent and "actor" not in params:
        raise ValueError(f"{where}.independent: the scenario must declare the param 'actor'")
    max_age = raw.get("max_age_s")
    if max_age is not None and (type(max_age) is not int or max_age <= 0):
        raise ValueError(f"{where}.max_age_s: a positive integer of seconds")
    signed_by = raw.get("signed_by", [])
    if not isinstance(signed_by, list) or not set(signed_by) <= set(keys):
        raise ValueError(f"{where}.signed_by: key ids declared under [keys]")
    return Policy(
        frozenset(ingress), tuple(producers), scope_kind, scope_param, scope_value,
        independent, None if max_age is None else max_age * 1_000_000_000, frozenset(signed_by),
    )  # fmt: skip


def _scope(raw: Any, where: str, params: tuple[str, ...]) -> tuple[str, str | None, str | None]:
    if not isinstance(raw, Mapping) or raw.get("kind") not in SCOPE_KINDS:
        raise ValueError(f"{where}: {{ kind = one of {', '.join(SCOPE_KINDS)}, param|value }}")
    _keys_only(raw, {"kind", "param", "value"}, where)
    param, value = raw.get("param"), raw.get("value")
    if (param is None) == (value is None):
        raise ValueError(f"{where}: give exactly one of param or value")
    if param is not None and param not in params:
        raise ValueError(f"{where}.param: {param!r} is not declared in params")
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}.value: a string")
    return raw["kind"], param, value


def _stages(raw: Any, conditions: Mapping[str, Condition]) -> dict[str, Stage]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("stages: a non-empty list ([[stages]] tables)")
    out: dict[str, Stage] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ValueError(f"stages[{index}]: a table")
        _keys_only(item, _STAGE, f"stages[{index}]")
        sid = _id(item.get("id"), f"stages[{index}].id")
        if sid in out:
            raise ValueError(f"stages[{index}].id: {sid!r} is declared twice")
        after = None
        if "after" in item:
            after = logic.parse(item["after"], f"stage {sid}.after", allow_not=False)
        complete = logic.parse(item.get("complete"), f"stage {sid}.complete", allow_not=True)
        _resolve(complete, conditions, f"stage {sid}.complete", "condition")
        intents = _intents(item.get("intents", []), f"stage {sid}.intents")
        out[sid] = Stage(sid, after, complete, intents)
    for stage in out.values():
        if stage.after is not None:
            _resolve(stage.after, out, f"stage {stage.id}.after", "stage")
            if stage.id in logic.refs(stage.after):
                raise ValueError(f"stage {stage.id}.after: a stage cannot wait for itself")
    return out


def _resolve(node: logic.Node, known: Mapping[str, Any], where: str, what: str) -> None:
    for ref in logic.refs(node):
        if ref not in known:
            raise ValueError(f"{where}: {ref!r} is not a declared {what}")


def _intents(raw: Any, where: str) -> tuple[Intent, ...]:
    if not isinstance(raw, list):
        raise ValueError(f'{where}: a list of {{ kind = "..." }} tables')
    out = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not set(item) <= {"kind", "detail"}:
            raise ValueError(f'{where}[{index}]: {{ kind = "...", detail = "..." }}')
        detail = item.get("detail")
        out.append(
            Intent(_id(item.get("kind"), f"{where}[{index}].kind"), _opt_text(detail, where))
        )
    return tuple(out)


def _opt_text(value: Any, where: str) -> str | None:
    return None if value is None else _text(value, f"{where}.detail")


def _topological(stages: Mapping[str, Stage]) -> tuple[str, ...]:
    """Kahn's algorithm in declaration order; a cycle is a load error naming a stage."""
    deps = {sid: set(logic.refs(s.after)) if s.after else set() for sid, s in stages.items()}
    order: list[str] = []
    placed: set[str] = set()
    remaining = list(stages)
    while remaining:
        ready = [sid for sid in remaining if deps[sid] <= placed]
        if not ready:
            raise ValueError(f"stages: the prerequisite graph has a cycle through {remaining[0]!r}")
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

"""The scenario document is a strict model in the registry (issue 25): every scenario the
gate loads validates against the shipped schema, and what the schema refuses the gate
refuses too, with a sentence naming the place."""

from __future__ import annotations

import json
import re
import tomllib
from decimal import Decimal
from typing import Any

import pytest

from factory.gate.errors import ScenarioInvalid
from factory.gate.scenario import builtin_names, builtin_source, load_bytes
from factory.gate.scenario_doc import ScenarioDoc, parse_scenario_doc
from tests.gate.helpers import condition, scenario_doc
from tests.support.schemas import assert_valid, validator


def _load(doc: dict[str, Any]) -> None:
    load_bytes(json.dumps(doc).encode(), "json")


@pytest.mark.parametrize("name", builtin_names())
def test_the_shipped_scenarios_validate_against_the_shipped_schema(name: str) -> None:
    raw = tomllib.loads(builtin_source(name).decode(), parse_float=Decimal)
    assert_valid("gate-scenario", raw)
    assert isinstance(parse_scenario_doc(raw), ScenarioDoc)


def test_a_scenario_with_every_part_validates() -> None:
    key = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
    doc = scenario_doc(
        [condition("c", universe="files", description="d",
                   policy={"ingress": ["acquired"], "producers": ["ci*"], "independent": True,
                           "max_age_s": 60, "signed_by": ["k"],
                           "scope": {"kind": "tree", "param": "tree"}},
                   acquire={"provider": "file", "path": "${tree}/x.json"})],
        [{"id": "s", "complete": "c", "description": "d",
          "intents": [{"kind": "publish", "detail": "x"}]}],
        params=["actor", "tree"], keys={"k": {"ed25519": key}},
    )  # fmt: skip
    _load(doc)
    assert_valid("gate-scenario", doc)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"extra": 1}, "(top): unknown key 'extra'"),
        ({"id": "not an id"}, "id: an id of letters"),
        ({"params": "actor"}, "params: a list of parameter names"),
        ({"conditions": []}, "conditions: a non-empty list"),
        ({"completion": {"intents": []}}, "completion.law: a requirement is an id"),
        ({"keys": {"k": {"ed25519": "a2V5", "x": 1}}}, "keys.k: unknown key 'x'"),
    ],
)
def test_the_model_and_the_schema_refuse_together(change: dict[str, Any], words: str) -> None:
    doc = {**scenario_doc([condition("c")]), **change}
    with pytest.raises(ScenarioInvalid, match=f"the scenario is invalid: {_re(words)}"):
        _load(doc)
    assert not validator("gate-scenario").is_valid(doc)
    assert validator("gate-scenario").is_valid(scenario_doc([condition("c")]))  # twin


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ({"zz": 1}, "condition c.policy: unknown key 'zz'"),
        ({"ingress": []}, "condition c.policy.ingress: a non-empty list"),
        ({"producers": [""]}, "condition c.policy.producers: a list of producer names"),
        ({"max_age_s": True}, "condition c.policy.max_age_s: a positive integer"),
        ({"scope": {"kind": "tree"}}, "condition c.policy.scope: give exactly one of param"),
        ({"scope": {"kind": "tree", "value": 1}}, "condition c.policy.scope.value: a string"),
    ],
)
def test_a_policy_problem_names_the_condition(policy: dict[str, Any], words: str) -> None:
    with pytest.raises(ScenarioInvalid, match=_re(words)):
        _load(scenario_doc([condition("c", policy=policy)]))


def test_a_place_before_a_valid_id_is_named_by_its_index() -> None:
    with pytest.raises(ScenarioInvalid, match=_re("conditions[1]: unknown key 'zz'")):
        _load(scenario_doc([condition("c"), {**condition("d"), "id": 5, "zz": 1}]))
    with pytest.raises(ScenarioInvalid, match=_re("conditions[0].id: an id of letters")):
        _load(scenario_doc([condition("not an id")]))


def test_a_condition_description_is_text_and_a_string_one_loads() -> None:
    with pytest.raises(ScenarioInvalid, match=_re("condition c.description: a string")):
        _load(scenario_doc([condition("c", description=5)]))
    _load(scenario_doc([condition("c", description="the coverage floor")]))  # twin


def _re(text: str) -> str:
    return re.escape(text)

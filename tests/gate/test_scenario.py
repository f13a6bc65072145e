"""Scenario loading: everything is checked before any run exists (SPEC G)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from factory.gate.errors import ScenarioInvalid
from factory.gate.scenario import builtin_names, load_builtin, load_bytes
from tests.gate.helpers import condition, scenario, scenario_doc

TOML = b"""
schema = "factory.gate-scenario/1"
id = "t"
params = []

[[conditions]]
id = "cov"
domain = { kind = "decimal" }
predicate = "ge"
operand = 0.80

[[stages]]
id = "s"
complete = { all = ["cov"] }

[completion]
law = { all = ["s"] }
"""


def test_toml_and_json_forms_of_one_scenario_share_the_spec_hash() -> None:
    from_toml = load_bytes(TOML, "toml")
    from_json = scenario([condition("cov", "decimal", "ge", 0.8)])
    assert from_toml.spec_hash == from_json.spec_hash
    assert from_toml.conditions["cov"].predicate.describe()["operand"] == "0.8"


def test_a_changed_operand_changes_the_spec_hash_and_an_equal_spelling_does_not() -> None:
    a = scenario([condition("c", "decimal", "ge", 1)])
    b = scenario([condition("c", "decimal", "ge", 1.0)])
    c = scenario([condition("c", "decimal", "ge", 1.5)])
    assert a.spec_hash == b.spec_hash != c.spec_hash


def _bad(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(ScenarioInvalid, match=match):
        load_bytes(json.dumps(doc).encode(), "json")


def test_cycles_are_refused() -> None:
    stages = [
        {"id": "a", "after": "b", "complete": "c"},
        {"id": "b", "after": "a", "complete": "c"},
    ]
    _bad(scenario_doc([condition("c")], stages), "cycle")
    _bad(scenario_doc([condition("c")], [{"id": "a", "after": "a", "complete": "c"}]), "itself")


def test_prerequisites_and_the_completion_law_must_be_monotone() -> None:
    stages = [{"id": "a", "complete": "c"}, {"id": "b", "after": {"not": "a"}, "complete": "c"}]
    _bad(scenario_doc([condition("c")], stages), "monotone")
    _bad(scenario_doc([condition("c")], completion={"not": "s"}), "monotone")


def test_references_must_resolve() -> None:
    _bad(
        scenario_doc([condition("c")], [{"id": "s", "after": "zz", "complete": "c"}]),
        "declared stage",
    )
    _bad(scenario_doc([condition("c")], completion="nope"), "declared stage")
    _bad(scenario_doc([condition("c")], [{"id": "s", "complete": "s"}]), "declared condition")


@pytest.mark.parametrize(
    ("cond", "match"),
    [
        (condition("c", "float"), "kind must be"),
        (condition("c", "boolean", "gt", True), "ordered"),
        (condition("c", "integer", "exists", 1), "takes no operand"),
        (condition("c", "integer", "equals", ...), "needs an operand"),
        (condition("c", "integer", "matches", 1), "predicate must be"),
        (condition("c", "string", "equals", "x" * 5000), "longer than"),
        (condition("c", "integer", "equals", 0, extra=1), "unknown key"),
        (condition("c", "integer", "equals", 0, universe="bad universe"), "universe"),
        (condition("c", "decimal", "equals", "1.5"), "not a decimal"),
    ],
)
def test_condition_errors(cond: dict[str, Any], match: str) -> None:
    _bad(scenario_doc([cond]), match)


def test_ids_are_unique() -> None:
    _bad(scenario_doc([condition("c"), condition("c")]), "declared twice")
    stages = [{"id": "s", "complete": "c"}, {"id": "s", "complete": "c"}]
    _bad(scenario_doc([condition("c")], stages), "declared twice")


def test_policy_errors() -> None:
    _bad(scenario_doc([condition("c", policy={"independent": True})]), "param 'actor'")
    _bad(
        scenario_doc([condition("c", policy={"scope": {"kind": "tree", "param": "t"}})]),
        "not declared",
    )
    _bad(scenario_doc([condition("c", policy={"signed_by": ["k"]})]), "key ids")
    _bad(scenario_doc([condition("c", policy={"ingress": ["mailed"]})]), "ingress")
    _bad(scenario_doc([condition("c", policy={"max_age_s": 0})]), "positive")


def test_bindings_are_checked_per_provider() -> None:
    def with_acquire(acquire: dict[str, Any], params: list[str] | None = None) -> dict[str, Any]:
        return scenario_doc([condition("c", acquire=acquire)], params=params)

    _bad(with_acquire({"provider": "http", "url": "x"}), "provider: one of")
    _bad(with_acquire({"provider": "file"}), "lacks 'path'")
    _bad(with_acquire({"provider": "file", "path": "x", "shell": True}), "unknown argument")
    _bad(with_acquire({"provider": "file", "path": "${nope}"}), "not a declared param")
    _bad(with_acquire({"provider": "review-gate", "gate": "merge", "repo": "."}), "gate: one of")
    _bad(with_acquire({"provider": "command", "argv": "make test", "cwd": "."}), "list of strings")
    ok = with_acquire({"provider": "file", "path": "${wt}/x.json", "pointer": "/a"}, ["wt"])
    assert load_bytes(json.dumps(ok).encode(), "json").conditions["c"].acquire is not None


def test_syntax_errors_name_the_format() -> None:
    with pytest.raises(ScenarioInvalid, match="toml"):
        load_bytes(b"schema = ", "toml")
    with pytest.raises(ScenarioInvalid, match="twice"):
        load_bytes(b'{"schema": 1, "schema": 2}', "json")
    _bad({**scenario_doc([condition("c")]), "schema": "factory.gate-scenario/2"}, "schema must be")


def test_disconnected_parts_several_roots_forks_and_diamonds_load() -> None:
    stages = [
        {"id": "root1", "complete": "c"},
        {"id": "root2", "complete": "c"},
        {"id": "left", "after": "root1", "complete": "c"},
        {"id": "right", "after": "root1", "complete": "c"},
        {"id": "join", "after": {"all": ["left", "right"]}, "complete": "c"},
        {"id": "lonely", "complete": "c"},
    ]
    sc = scenario(
        [condition("c")], stages, completion={"quorum": {"k": 2, "of": ["join", "root2", "lonely"]}}
    )
    order = sc.order
    assert order.index("join") > order.index("left") > order.index("root1")


def test_builtin_scenarios_load() -> None:
    assert "receipt-approved" in builtin_names()
    for name in builtin_names():
        assert load_builtin(name).id == name


def test_toml_native_dates_and_offset_date_times_are_accepted_and_local_ones_refused() -> None:
    def toml(kind: str, operand: str) -> bytes:
        return TOML.replace(
            b'domain = { kind = "decimal" }', f'domain = {{ kind = "{kind}" }}'.encode()
        ).replace(b"operand = 0.80", f"operand = {operand}".encode())

    native = load_bytes(toml("instant", "2026-01-01T01:00:00+01:00"), "toml")
    quoted = load_bytes(toml("instant", '"2026-01-01T00:00:00Z"'), "toml")
    assert native.spec_hash == quoted.spec_hash
    assert (
        load_bytes(toml("date", "2026-01-01"), "toml").spec_hash
        == load_bytes(toml("date", '"2026-01-01"'), "toml").spec_hash
    )
    for bad in ("2026-01-01T00:00:00", "00:00:00"):
        with pytest.raises(ScenarioInvalid):
            load_bytes(toml("instant", bad), "toml")
    with pytest.raises(ScenarioInvalid, match="not a date"):
        load_bytes(toml("date", "2026-01-01T00:00:00Z"), "toml")


def test_a_quorum_cannot_count_one_item_twice() -> None:
    law = {"quorum": {"k": 2, "of": ["c", "c"]}}
    _bad(scenario_doc([condition("c")], [{"id": "s", "complete": law}]), "listed twice")

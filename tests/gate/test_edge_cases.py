"""Every edge case of decision-gate.md §5, against the closed-domain semantics (SPEC G).

The reference compares raw JSON at run time; here a domain is fixed at load, so several of
its run-time outcomes become load errors or typed operational failures — each test says
which and why.
"""

from __future__ import annotations

from typing import Any

import pytest

from factory.gate.errors import ScenarioInvalid
from factory.gate.resolve import Context, Outcome, resolve
from tests.gate.helpers import NOW, condition, evidence, observation, raw_observation, scenario


def outcome(
    cond: dict[str, Any], payloads: list[bytes], params: dict[str, str] | None = None
) -> Outcome:
    sc = scenario([cond], params=list(params or {}))
    records = [evidence(sc, f"e{i}", p) for i, p in enumerate(payloads)]
    return resolve(sc.conditions[cond["id"]], records, Context(params or {}, sc.keys, NOW))


def result_of(kind: str, predicate: str, operand: Any, value_json: str, **dom: Any) -> str:
    cond = condition("c", kind, predicate, operand)
    cond["domain"].update(dom)
    return outcome(cond, [raw_observation("c", value_json)]).result


# -- numbers, top level and nested -------------------------------------------------------


@pytest.mark.parametrize("text", ["1", "1.0", "1e0", "1.00", "10e-1"])
def test_decimal_one_equals_every_spelling_at_top_level(text: str) -> None:
    assert result_of("decimal", "equals", 1, text) == "true"
    assert result_of("decimal", "equals", 1.0, text) == "true"


@pytest.mark.parametrize("text", ['{"a": 1.0}', '{"a": 1e0}', '{"a": 1}'])
def test_decimal_equality_holds_inside_records(text: str) -> None:
    cond = condition("c", "record", "equals", {"a": 1})
    cond["domain"] = {"kind": "record", "fields": {"a": {"kind": "decimal"}}}
    assert outcome(cond, [raw_observation("c", text)]).result == "true"


def test_decimal_membership_in_sets_uses_decimal_equality() -> None:
    assert result_of("decimal", "in", [1.0, 2], "1") == "true"
    cond = condition("c", "set", "contains", 1)
    cond["domain"] = {"kind": "set", "of": {"kind": "decimal"}}
    assert outcome(cond, [raw_observation("c", "[1.0, 3]")]).result == "true"
    assert outcome(cond, [raw_observation("c", "[1.5, 3]")]).result == "false"


def test_negative_zero_equals_zero() -> None:
    assert result_of("decimal", "equals", 0, "-0.0") == "true"
    assert result_of("decimal", "equals", -0.0, "0") == "true"


def test_integers_above_two_to_the_53_stay_exact() -> None:
    big = 2**53
    assert result_of("integer", "equals", big + 1, str(big + 1)) == "true"
    assert result_of("integer", "equals", big, str(big + 1)) == "false"
    assert result_of("decimal", "gt", big, str(big + 1)) == "true"


def test_integer_domain_refuses_a_fraction_as_outside_the_domain() -> None:
    got = outcome(condition("c"), [raw_observation("c", "1.0")])
    assert (got.resolution, got.result) == ("failed", "failed")
    assert got.failures[0].code == "observation-outside-domain"


def test_string_123_is_not_the_integer_123() -> None:
    got = outcome(condition("c", "integer", "equals", 123), [observation("c", "123")])
    assert got.failures[0].family == "operational"
    assert got.failures[0].code == "observation-outside-domain"
    with pytest.raises(ScenarioInvalid, match="operand is not a string"):
        scenario([condition("c", "string", "equals", 123)])


def test_true_is_never_one() -> None:
    got = outcome(condition("c", "integer", "equals", 1), [observation("c", True)])
    assert got.failures[0].code == "observation-outside-domain"
    with pytest.raises(ScenarioInvalid, match="operand is not a boolean"):
        scenario([condition("c", "boolean", "equals", 1)])
    with pytest.raises(ScenarioInvalid, match="operand is not a decimal"):
        scenario([condition("c", "decimal", "equals", True)])


def test_null_is_not_zero_and_is_only_a_value_in_nullable_domains() -> None:
    assert result_of("integer", "equals", 0, "null", nullable=True) == "false"
    assert result_of("integer", "not_equals", 0, "null", nullable=True) == "true"
    got = outcome(condition("c"), [observation("c", None)])
    assert got.failures[0].code == "observation-outside-domain"


def test_missing_field_and_null_field_are_distinct() -> None:
    cond = condition("c", "record", "equals", {"a": None})
    cond["domain"] = {
        "kind": "record",
        "fields": {"a": {"kind": "integer", "nullable": True}},
        "optional": ["a"],
    }
    assert outcome(cond, [observation("c", {"a": None})]).result == "true"
    assert outcome(cond, [observation("c", {})]).result == "false"


# -- presence ----------------------------------------------------------------------------


def test_exists_on_null_is_true() -> None:
    assert result_of("integer", "exists", ..., "null", nullable=True) == "true"
    assert result_of("integer", "not_exists", ..., "null", nullable=True) == "false"


def test_exists_on_a_provider_error_is_a_failure_not_unknown() -> None:
    failure = {"family": "operational", "code": "provider-timeout", "message": "took too long"}
    for name in ("exists", "not_exists"):
        got = outcome(condition("c", "integer", name, ...), [observation("c", failure=failure)])
        assert (got.resolution, got.result) == ("failed", "failed")
        assert got.failures[0].code == "provider-timeout"


def test_error_free_complete_absence_is_observed_absent() -> None:
    for name, want in (("exists", "false"), ("not_exists", "true"), ("equals", "unknown")):
        cond = condition("c", "integer", name, 0 if name == "equals" else ..., universe="registry")
        got = outcome(cond, [observation("c", absent="registry")])
        assert (got.resolution, got.result) == ("observed-absent", want)


def test_incomplete_or_foreign_absence_is_insufficient() -> None:
    cond = condition("c", "integer", "not_exists", ..., universe="registry")
    partial = outcome(cond, [observation("c", absent="registry", complete=False)])
    assert (partial.resolution, partial.result) == ("insufficient", "unknown")
    assert "absence-from-an-incomplete-observation" in partial.rejected[0][1]
    foreign = outcome(cond, [observation("c", absent="other")])
    assert foreign.resolution == "insufficient"
    undeclared = outcome(
        condition("c", "integer", "not_exists", ...), [observation("c", absent="x")]
    )
    assert undeclared.resolution == "insufficient"


def test_no_record_is_missing() -> None:
    got = outcome(condition("c"), [])
    assert (got.resolution, got.result) == ("missing", "unknown")


# -- mismatches and sets -----------------------------------------------------------------


def test_equals_mismatch_is_false() -> None:
    assert result_of("integer", "equals", 1, "2") == "false"


def test_ordering_a_null_is_unknown_and_ordering_an_unordered_domain_is_a_load_error() -> None:
    assert result_of("integer", "lt", 5, "null", nullable=True) == "unknown"
    with pytest.raises(ScenarioInvalid, match="ordered domain"):
        scenario([condition("c", "boolean", "lt", True)])


def test_in_with_a_set_valued_domain_and_empty_in_are_load_errors() -> None:
    cond = condition("c", "set", "in", [[1]])
    cond["domain"] = {"kind": "set", "of": {"kind": "integer"}}
    with pytest.raises(ScenarioInvalid, match="scalar domains"):
        scenario([cond])
    with pytest.raises(ScenarioInvalid, match="non-empty"):
        scenario([condition("c", "integer", "in", [])])


def test_empty_set_membership_is_false() -> None:
    cond = condition("c", "set", "contains", 1)
    cond["domain"] = {"kind": "set", "of": {"kind": "integer"}}
    assert outcome(cond, [observation("c", [])]).result == "false"


def test_contains_empty_needle_is_true() -> None:
    assert result_of("string", "contains", "", '"anything"') == "true"
    cond = condition("c", "set", "contains_all", [])
    cond["domain"] = {"kind": "set", "of": {"kind": "string"}}
    assert outcome(cond, [observation("c", ["a"])]).result == "true"


def test_contains_is_substring_for_strings_and_membership_for_sets() -> None:
    assert result_of("string", "contains", "ell", '"hello"') == "true"
    cond = condition("c", "set", "contains", "ell")
    cond["domain"] = {"kind": "set", "of": {"kind": "string"}}
    assert outcome(cond, [observation("c", ["hello"])]).result == "false"
    assert outcome(cond, [observation("c", ["ell", "x"])]).result == "true"
    with pytest.raises(ScenarioInvalid, match="contains applies"):
        scenario([condition("c", "integer", "contains", 1)])


def test_non_ascii_strings_order_by_code_point() -> None:
    assert result_of("string", "lt", "é", '"z"') == "true"  # z U+007A < é U+00E9
    assert result_of("string", "gt", "Z", '"a"') == "true"
    assert result_of("string", "lt", "\U0001f600", '"\\uffff"') == "true"


# -- time --------------------------------------------------------------------------------


def test_z_equals_plus_zero_offset_and_offsets_compare_as_instants() -> None:
    assert (
        result_of("instant", "equals", "2026-01-01T00:00:00Z", '"2026-01-01T00:00:00+00:00"')
        == "true"
    )
    assert (
        result_of("instant", "equals", "2026-01-01T01:00:00+01:00", '"2026-01-01T00:00:00Z"')
        == "true"
    )
    assert (
        result_of("instant", "lt", "2026-01-01T00:00:00Z", '"2026-01-01T00:30:00+01:00"') == "true"
    )
    assert (
        result_of("instant", "equals", "2026-01-01T00:00:00.5Z", '"2026-01-01T00:00:00.500000000Z"')
        == "true"
    )


def test_date_against_an_instant_is_a_load_error() -> None:
    with pytest.raises(ScenarioInvalid, match="operand is not a date"):
        scenario([condition("c", "date", "lt", "2026-01-01T00:00:00Z")])
    with pytest.raises(ScenarioInvalid, match="operand is not a instant"):
        scenario([condition("c", "instant", "lt", "2026-01-01")])


def test_a_date_observation_for_an_instant_condition_is_outside_the_domain() -> None:
    got = outcome(
        condition("c", "instant", "lt", "2026-01-01T00:00:00Z"), [observation("c", "2025-01-01")]
    )
    assert got.failures[0].code == "observation-outside-domain"


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-01T00:00:00",
        "2026-1-5",
        "2026-01-01 00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:60Z",
    ],
)
def test_an_instant_without_offset_or_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(ScenarioInvalid):
        scenario([condition("c", "instant", "equals", text)])


def test_lenient_dates_are_refused() -> None:
    with pytest.raises(ScenarioInvalid):
        scenario([condition("c", "date", "equals", "2024-1-5")])
    assert result_of("date", "lt", "2024-01-05", '"2024-01-04"') == "true"

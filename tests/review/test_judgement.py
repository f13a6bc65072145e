"""Strict judgement inputs: unknown fields refused, evidence concrete, severe findings
classified, one JSON value; each refusal has a twin that is accepted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from factory.review.errors import ReviewInputInvalid
from factory.review.judgement import (
    RefuterInput,
    ReviewerInput,
    ValidatorInput,
    json_schema,
    parse_input,
    wire_schema,
)
from tests.review.builders import finding


def _reviewer(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"findings": [finding("a.py:3")], "evidence": ["read the diff of a.py"]}
    doc.update(overrides)
    return doc


def _parse(doc: Any) -> ReviewerInput:
    return parse_input(ReviewerInput, json.dumps(doc).encode(), what="the result")


def test_a_well_formed_result_is_accepted() -> None:
    r = _parse(_reviewer())
    assert r.findings[0].severity == "CRITICAL" and r.lens is None


@pytest.mark.parametrize(
    "doc",
    [
        _reviewer(confidence=0.9),  # unknown top-level field
        _reviewer(findings=[{**finding("a.py:3"), "id": "R3-001"}]),  # models never fill ids
        _reviewer(findings=[{**finding("a.py:3"), "fix": "do x"}]),
        _reviewer(evidence=[]),
        _reviewer(evidence=["   "]),
        _reviewer(findings=[{**finding("a.py:3"), "proof_refs": []}]),
        _reviewer(lens="review-reliability"),  # only short names
        _reviewer(findings=[{**finding("a.py:3"), "severity": "critical"}]),
        _reviewer(findings=None),
        {"evidence": ["read it"]},  # findings missing
    ],
)
def test_malformed_results_are_refused(doc: Any) -> None:
    with pytest.raises(ReviewInputInvalid):
        _parse(doc)


@pytest.mark.parametrize(
    "text",
    [
        "n/a",
        "N/A",
        "todo",
        "TBD",
        "passed",
        "Passed.",
        "success",
        "none",
        "ok",
        "<proof>",
        "{{evidence}}",
        "[insert proof]",
        "...",
        "\u200b",
        "\ufeff",
        "\x01\x7f",
        "\u200b\u2060\u00a0",
    ],
)
def test_placeholder_evidence_is_not_concrete(text: str) -> None:
    with pytest.raises(ReviewInputInvalid, match=r"placeholder|template|at least|visible"):
        _parse(_reviewer(evidence=[text]))
    with pytest.raises(ReviewInputInvalid):
        _parse(_reviewer(findings=[{**finding("a.py:3"), "proof_refs": [text]}]))


@pytest.mark.parametrize(
    "text",
    [
        "test_amount passes on base and fails on the candidate",
        "amount < 0 is accepted",
        "ran pytest -q: 40 passed",
        "\u200bx < 0 is accepted",
    ],
)
def test_concrete_evidence_twins_are_accepted(text: str) -> None:
    assert _parse(_reviewer(evidence=[text])).evidence == (text,)


@pytest.mark.parametrize("missing", ["evidence_class", "causal_disposition"])
@pytest.mark.parametrize("severity", ["BLOCKER", "CRITICAL"])
def test_severe_findings_need_evidence_class_and_causality(missing: str, severity: str) -> None:
    f = {**finding("a.py:3", severity=severity)}
    del f[missing]
    with pytest.raises(ReviewInputInvalid, match="evidence_class and causal_disposition"):
        _parse(_reviewer(findings=[f]))
    twin = {**finding("a.py:3", severity="WARNING")}
    del twin[missing]
    assert _parse(_reviewer(findings=[twin]))


@pytest.mark.parametrize(
    "data",
    [
        b'{"findings": [], "evidence": ["x read"], "evidence": ["y read"]}',  # duplicate key
        b'{"findings": [], "evidence": ["read it"]} {}',  # two values
        b'{"findings": [], "evidence": ["read it"], "lens": NaN}',
        b"\xff\xfe",
        b'{"findings": [], "evidence": ["\\ud800 lone"]}',
    ],
)
def test_not_strict_json_is_refused(data: bytes) -> None:
    with pytest.raises(ReviewInputInvalid):
        parse_input(ReviewerInput, data, what="the result")


def test_a_preserved_incident_artifact_is_refused_as_a_result_by_name() -> None:
    doc = {"schema": "factory.review-preserved-lens-output/1", "payload_base64": "e30="}
    with pytest.raises(ReviewInputInvalid) as info:
        _parse(doc)
    assert info.value.code == "review-preserved-not-result"
    assert "--replay-preserved" in info.value.message


def test_refuter_and_validator_are_strict() -> None:
    good = {
        "results": [
            {"finding_id": "R3-001", "outcome": "refuted", "proof_refs": ["line 4 has defer"]}
        ]
    }
    assert parse_input(RefuterInput, json.dumps(good).encode(), what="r")
    for bad in (
        {"results": [{**good["results"][0], "note": "x"}]},
        {"results": [{**good["results"][0], "finding_id": "reliability-1"}]},
        {"results": [{**good["results"][0], "outcome": "maybe"}]},
    ):
        with pytest.raises(ReviewInputInvalid):
            parse_input(RefuterInput, json.dumps(bad).encode(), what="r")
    check = {"passed": True, "evidence": ["test passes"]}
    v = {"original_criteria": check, "correction_regression": check, "follow_ups": []}
    assert parse_input(ValidatorInput, json.dumps(v).encode(), what="v")
    for bad_v in (
        {**v, "extra": 1},
        {**v, "original_criteria": {"passed": "yes", "evidence": ["x y"]}},
        {k: v[k] for k in ("original_criteria", "follow_ups")},
    ):
        with pytest.raises(ReviewInputInvalid):
            parse_input(ValidatorInput, json.dumps(bad_v).encode(), what="v")


def test_schemas_are_generated_from_the_models_and_forbid_extra_fields() -> None:
    for role in ("reviewer", "refuter", "validator"):
        doc = json_schema(role)
        assert doc["$schema"].endswith("2020-12/schema") and doc["additionalProperties"] is False
    wire = wire_schema("reviewer")
    finding_def = wire["$defs"]["FindingInput"]
    assert set(finding_def["required"]) == set(finding_def["properties"])  # strict mode
    assert {"type": "null"} in finding_def["properties"]["evidence_class"]["anyOf"]

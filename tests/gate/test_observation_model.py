"""The observation document is a strict model in the registry (issue 25): what the gate
admits validates against the shipped schema, and what the model refuses, the gate does."""

from __future__ import annotations

import json

import pytest

from factory.gate.errors import EvidenceRefused
from factory.gate.observation import Observation, parse_observation
from tests.gate.helpers import condition, evidence, observation, scenario
from tests.support.schemas import validator

SOUND = [
    observation("c", 1),
    observation("c", absent="files"),
    observation("c", failure={"family": "integrity", "code": "witness-forged", "message": "m"}),
    observation("c", [1, {"a": None}], actor="bot", derivation=["e0"], mutated=True),
]


@pytest.mark.parametrize("payload", SOUND)
def test_admitted_observations_validate_against_the_shipped_schema(payload: bytes) -> None:
    evidence(scenario([condition("c")]), "e1", payload)  # the gate admits it
    assert validator("gate-observation").is_valid(json.loads(payload))
    assert isinstance(parse_observation(json.loads(payload)), Observation)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"extra": 1}, "unknown field 'extra'"),
        ({"schema_id": "factory.gate-observation/1"}, "unknown field 'schema_id'"),
        ({"ingress": "pushed"}, "ingress must be submitted or acquired"),
        ({"observation": {"value": 1, "absent": {}}}, "exactly one of value, absent, failure"),
        ({"derivation": ["ok", "not an id"]}, "not an evidence id"),
    ],
)
def test_the_model_and_the_schema_refuse_together(change: dict[str, object], words: str) -> None:
    doc = {**json.loads(observation("c", 1)), **change}
    with pytest.raises(EvidenceRefused, match=words):
        evidence(scenario([condition("c")]), "e1", json.dumps(doc).encode())
    assert not validator("gate-observation").is_valid(doc)

"""The gate's documents are strict models in the registry (issue 25): what the gate admits
or prints validates against the shipped schema, and what the model refuses, the gate does."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from factory.documents.emit import json_line
from factory.gate.errors import EvidenceRefused
from factory.gate.evaluate import evaluate
from factory.gate.evaluation import EvaluationRecord
from factory.gate.observation import Observation, parse_observation
from factory.gate.runpack import export
from factory.gate.service import Gate, LoadedRun
from factory.gate.state import GENESIS_PREV, genesis, make_entry, start_body
from factory.gate.verify import verify
from tests.gate.helpers import (
    NOW,
    condition,
    evidence,
    new_gate,
    observation,
    scenario,
    started,
    two_stages,
)
from tests.support.schemas import assert_valid, validator

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


def _stage_a_done(tmp_path: Path) -> tuple[Gate, LoadedRun]:
    gate = new_gate(tmp_path / "store")
    run = started(gate, two_stages())
    gate.submit(run, "e1", observation("c1", 0))
    step = gate.accept(run, gate.derive(run))
    assert step.run is not None
    return gate, step.run


def test_gate_status_and_verification_validate_against_their_schemas(tmp_path: Path) -> None:
    gate, run = _stage_a_done(tmp_path)
    assert validator("gate-status").is_valid(gate.status(run))
    export(gate, run, tmp_path / "pack")
    report = verify(tmp_path / "pack", now=NOW + 10**9)
    assert report["ok"] and validator("gate-verification").is_valid(report)
    assert not validator("gate-verification").is_valid({**report, "ok": "yes"})


def test_a_file_name_that_is_not_utf8_is_reported_not_crashed_on(tmp_path: Path) -> None:
    """A hostile pack can hold a file whose name is not UTF-8 (a surrogate escape in
    Python): the verification names it as a problem and still prints."""
    gate = new_gate(tmp_path / "store")
    run = started(gate, two_stages())
    export(gate, run, tmp_path / "pack")
    (tmp_path / "pack" / os.fsdecode(b"stray-\xff")).write_bytes(b"x")
    report = verify(tmp_path / "pack", now=NOW + 10**9)
    assert not report["ok"]
    problems = report["properties"]["record_integrity"]["problems"]
    assert problems == ["stray-\udcff: present but not listed in the manifest"]
    assert b"stray-\\udcff" in json_line(report, sort_keys=True)


def test_a_runpacks_manifest_and_history_validate_against_their_schemas(tmp_path: Path) -> None:
    gate, run = _stage_a_done(tmp_path)
    pack = tmp_path / "pack"
    export(gate, run, pack)
    manifest = json.loads((pack / "manifest.json").read_bytes())
    assert validator("gate-runpack").is_valid(manifest)
    history = [json.loads(line) for line in (pack / "history.jsonl").read_bytes().splitlines()]
    assert len(history) == 2
    assert all(validator("gate-entry").is_valid(entry) for entry in history)
    assert not validator("gate-entry").is_valid({**history[0], "seq": "0"})
    bad_row = {**manifest, "files": [{**manifest["files"][0], "bytes": True}]}
    assert not validator("gate-runpack").is_valid(bad_row)


def test_a_manifest_row_of_the_wrong_shape_is_an_integrity_problem(tmp_path: Path) -> None:
    gate = new_gate(tmp_path / "store")
    run = started(gate, two_stages())
    pack = tmp_path / "pack"
    export(gate, run, pack)
    assert verify(pack, now=NOW + 10**9)["ok"]  # twin: as exported it verifies
    manifest = json.loads((pack / "manifest.json").read_bytes())
    manifest["files"][0]["bytes"] = True  # a bool is not a size
    (pack / "manifest.json").write_text(json.dumps(manifest))
    report = verify(pack, now=NOW + 10**9)
    problems = report["properties"]["record_integrity"]["problems"]
    assert problems[0] == "manifest files is not a list of {path, sha256, bytes}"
    assert not report["ok"]


def _rich_evaluation() -> dict[str, Any]:
    """An evaluation with every part of the record: a quorum and a negation in a law,
    intents, a failed condition, a rejected record, a stage that is not ready and an
    unevaluated condition."""
    conds = [
        condition("c1"),
        condition("c2", policy={"max_age_s": 60}),
        condition("c3"),
        condition("c4"),
        condition("c5"),
    ]
    stages = [
        {"id": "a", "complete": {"all": ["c1", {"quorum": {"k": 1, "of": ["c3", "c4"]}},
                                        {"not": "c2"}]},
         "intents": [{"kind": "publish", "detail": "artefact"}, {"kind": "notify"}]},
        {"id": "b", "after": "a", "complete": "c2"},
        {"id": "c", "after": "b", "complete": "c5"},
    ]  # fmt: skip
    sc = scenario(conds, stages, completion="c")
    records = [
        evidence(sc, "e1", observation("c1", 0)),
        evidence(sc, "e2", observation("c2", 0)),  # T0 is ten minutes old: rejected
        evidence(sc, "e3", observation("c3", 1)),
        evidence(
            sc,
            "e4",
            observation(
                "c4",
                failure={"family": "operational", "code": "provider-timeout", "message": "slow"},
            ),
        ),
    ]
    state = genesis(sc, make_entry("r", 0, GENESIS_PREV, start_body(sc, {})))
    return evaluate(sc, state, records, NOW).record


def test_an_evaluation_record_validates_against_its_shipped_schema() -> None:
    record = _rich_evaluation()
    assert record["conditions"][1]["rejected"] and record["conditions"][3]["failures"]
    assert record["unevaluated"] == ["c5"] and record["delta"]["intents"] == []
    assert {s["after"] for s in record["stages"]} == {"ready", "not-ready"}
    assert_valid("gate-evaluation", record)
    bad = json.loads(json.dumps(record))
    bad["stages"][0]["completion"]["items"][1]["result"] = "maybe"
    assert not validator("gate-evaluation").is_valid(bad)  # twin: a trace is checked too
    assert not validator("gate-evaluation").is_valid({**record, "extra": 1})


def test_an_evaluation_with_intents_validates_and_its_model_is_frozen() -> None:
    sc = scenario([condition("c")], [{"id": "s", "complete": "c", "intents": [
        {"kind": "publish", "detail": "artefact"}]}])  # fmt: skip
    state = genesis(sc, make_entry("r", 0, GENESIS_PREV, start_body(sc, {})))
    cand = evaluate(sc, state, [evidence(sc, "e1", observation("c", 0))], NOW)
    assert cand.record["delta"]["intents"] == [
        {"id": "1/s/0", "kind": "publish", "detail": "artefact", "source": "s"}
    ]
    assert_valid("gate-evaluation", cand.record)
    assert EvaluationRecord.model_validate(cand.record).json_value() == cand.record
    with pytest.raises(ValidationError):
        cand.model.model_copy(update={}).__setattr__("run", "other")

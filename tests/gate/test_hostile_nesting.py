"""JSON nested too deeply for Python's parser, met where the gate reads back its own records
(the store's history, a runpack's files, an evidence payload on export): each is the
reader's typed "does not parse" outcome, never a ``RecursionError`` escaping as an internal
error. Every case has its twin: the same record as ordinary JSON reads as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from factory.documents.reading import JsonRefused, read_own
from factory.gate.errors import StoreCorrupt
from factory.gate.runpack import export
from factory.gate.verify import verify
from tests.gate.helpers import NOW, condition, new_gate, observation, scenario, started

DEEP = b"[" * 100_000 + b"]" * 100_000


def _gate_with_one_accept(tmp_path: Path) -> Any:
    gate = new_gate(tmp_path)
    run = started(gate, scenario([condition("c1")]))
    gate.submit(run, "e1", observation("c1", 0))
    step = gate.accept(run, gate.derive(run))
    assert step.run is not None
    return gate, step.run


def _rewrite(db_path: Path, table: str, column: str, value: bytes) -> None:
    db = sqlite3.connect(db_path)
    db.execute(f"DROP TRIGGER {table}_no_update")
    db.execute(f"UPDATE {table} SET {column}=?", (value,))
    db.commit()
    db.close()


def test_plain_loads_refuses_hostile_nesting_as_a_value_error() -> None:
    with pytest.raises(JsonRefused, match="nested too deeply"):
        read_own(DEEP)
    assert read_own(b"[[1.5], {}]") == [[1.5], {}]  # twin: floats stay floats


def test_a_deeply_nested_history_entry_is_store_corrupt(tmp_path: Path) -> None:
    gate, _ = _gate_with_one_accept(tmp_path)
    gate.store.close()
    _rewrite(tmp_path / "gate.sqlite3", "entries", "body", DEEP)
    with pytest.raises(StoreCorrupt, match="does not parse"):
        new_gate(tmp_path).load("r1")


def test_twin_an_ordinary_history_loads(tmp_path: Path) -> None:
    gate, _ = _gate_with_one_accept(tmp_path)
    gate.store.close()
    assert new_gate(tmp_path).load("r1").state.seq == 1


def _pack(tmp_path: Path) -> Path:
    gate, run = _gate_with_one_accept(tmp_path)
    out = tmp_path / "pack"
    export(gate, run, out)
    return out


def _problems(pack: Path) -> str:
    report = verify(pack, now=NOW + 10**9)
    assert not report["ok"]
    return " ".join(report["properties"]["record_integrity"]["problems"])


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("manifest.json", "manifest.json is missing or not JSON"),
        ("history.jsonl", "history line 1 does not parse"),
        ("evidence.jsonl", "an evidence index line does not parse"),
    ],
)
def test_a_deeply_nested_runpack_file_is_a_verification_problem(
    tmp_path: Path, name: str, problem: str
) -> None:
    pack = _pack(tmp_path)
    (pack / name).write_bytes(DEEP + b"\n")
    assert problem in _problems(pack)


def test_twin_an_untouched_runpack_verifies(tmp_path: Path) -> None:
    assert verify(_pack(tmp_path), now=NOW + 10**9)["ok"]


def test_a_deeply_nested_evidence_payload_still_exports(tmp_path: Path) -> None:
    gate, run = _gate_with_one_accept(tmp_path)
    _rewrite(tmp_path / "gate.sqlite3", "evidence", "payload", DEEP)
    out = tmp_path / "pack"
    export(gate, run, out)  # the payload is carried as bytes; it names no artefact
    assert (out / "manifest.json").is_file()
    assert not list((out / "blobs").iterdir())


def test_twin_an_ordinary_evidence_payload_exports(tmp_path: Path) -> None:
    gate, run = _gate_with_one_accept(tmp_path)
    out = tmp_path / "pack"
    export(gate, run, out)
    index = [json.loads(line) for line in (out / "evidence.jsonl").read_bytes().splitlines()]
    assert [row["id"] for row in index] == ["e1"]

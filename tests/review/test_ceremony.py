"""Reclaim and repair ceremonies (issue 13): byte-preserving quarantine in two phases, an
audit record naming the proof class, uniqueness before repair, the exact authorization —
and validation never relaxed: the quarantined record still fails it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factory.review import ceremony
from factory.review.errors import ReviewRecordCorrupt, ReviewRefused
from factory.review.gate_errors import AuthorizationRefused
from factory.review.repair import reclaim, repair
from factory.review.service import open_context
from factory.review.store import STATE_FILE, decode_record
from tests.review.cli_helpers import store_root
from tests.review.gates_support import approve, begin, code, gate


def _approved(repo: Path, tmp: Path) -> str:
    (repo / "docs" / "guide.md").write_text("# guide\n\nreviewed words\n")
    return str(approve(repo, tmp)["lineage"])


def _corrupt_other(repo: Path, text: str) -> tuple[str, bytes]:
    saved = (repo / "README.md").read_text()
    (repo / "README.md").write_text(text)
    lid = str(begin(repo)["lineage"])
    (repo / "README.md").write_text(saved)
    path = store_root(repo) / lid / STATE_FILE
    doc = json.loads(path.read_bytes())
    doc["state"]["retired_field"] = True  # valid once, refused by today's strict model
    data = json.dumps(doc).encode()
    path.write_bytes(data)
    return lid, data


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_reclaim_quarantines_an_incomplete_entry_byte_for_byte_with_an_audit(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    crashed = store_root(repo) / "review-0123456789abcdef"
    (crashed / "evidence").mkdir(parents=True)
    (crashed / "evidence" / "policy-x").write_bytes(b"\x00raw bytes\xff")
    before = _files(crashed)
    denied = gate(repo, "pre-commit")
    assert denied.context.next[0] == (
        "factory review reclaim --lineage review-0123456789abcdef --reason TEXT --actor NAME"
    )
    out = reclaim(repo, "review-0123456789abcdef", "left by a crash", "maintainer")
    moved = Path(out["quarantine"]) / "entry"
    assert _files(moved) == before  # history byte-identical
    audit = json.loads(Path(out["audit"]).read_bytes())
    assert audit["schema"] == "factory.review-quarantine-audit/1"
    assert audit["proof"]["anomaly_class"] == "incomplete-entry" and audit["inventory_verified"]
    assert audit["actor"] == "maintainer" and audit["reason"] == "left by a crash"
    assert gate(repo, "pre-commit").allowed


def test_reclaim_refuses_a_lineage_that_is_not_an_incomplete_entry(
    repo: Path, tmp_path: Path
) -> None:
    lid = _approved(repo, tmp_path)
    with pytest.raises(ReviewRefused) as exc:
        reclaim(repo, lid, "not broken", "maintainer")
    assert exc.value.code == "review-ceremony-wrong-class"
    assert gate(repo, "pre-commit").allowed


def test_repair_needs_uniqueness_and_the_exact_binding_and_never_relaxes_validation(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    lid, data = _corrupt_other(repo, "first\n")
    assert code(gate(repo, "pre-commit")) == "receipt-discovery/authority-corrupted"
    with pytest.raises(AuthorizationRefused) as missing:
        repair(repo, lid, "invalid-record", "retired field", "ana", None)
    expected = missing.value.expected.encode()
    assert f"predecessor_lineage={lid}\n".encode() in expected
    auth = tmp_path / "auth.txt"
    auth.write_bytes(expected.replace(b"\n", b"\r\n"))
    with pytest.raises(AuthorizationRefused):
        repair(repo, lid, "invalid-record", "retired field", "ana", auth)
    other, _ = _corrupt_other(repo, "second\n")  # now two of the class: no amnesty
    auth.write_bytes(expected)
    with pytest.raises(ReviewRefused) as many:
        repair(repo, lid, "invalid-record", "retired field", "ana", auth)
    assert many.value.code == "review-ceremony-not-unique"
    (store_root(repo) / other / STATE_FILE).unlink()  # other is now an incomplete entry
    reclaim(repo, other, "made by this test", "ana")  # unique again: the same proof
    out = repair(repo, lid, "invalid-record", "retired field", "ana", auth)
    quarantined = Path(out["quarantine"]) / "entry" / STATE_FILE
    assert quarantined.read_bytes() == data
    with pytest.raises(ReviewRecordCorrupt):  # the validator still rejects the same record
        decode_record(lid, quarantined.read_bytes())
    audit = json.loads(Path(out["audit"]).read_bytes())
    assert audit["proof"]["anomaly_class"] == "invalid-record"
    assert audit["proof"]["class_members_in_inventory"] == [lid]
    assert audit["authorization_sha256"]
    assert gate(repo, "pre-commit").allowed


def test_a_ceremony_staged_before_a_crash_is_sealed_by_the_rerun(
    repo: Path, tmp_path: Path
) -> None:
    _approved(repo, tmp_path)
    crashed = store_root(repo) / "review-crashed"
    crashed.mkdir()
    (crashed / "note").write_bytes(b"residue")
    store = open_context(repo).store
    graph = ceremony.scan_graph(store)
    anomaly = next(a for a in ceremony.census(store, graph) if a.key == "review-crashed")
    items = ceremony.inventory(crashed)
    intent = {
        "schema": ceremony.CEREMONY_SCHEMA,
        "ceremony_id": "reclaim-test",
        "kind": "reclaim",
        "lineage_id": "review-crashed",
        "proof": ceremony.proof_of(anomaly, [anomaly], items),
        "inventory": items,
        "actor": "a",
        "reason": "r",
        "authorization_sha256": None,
        "staged_at": "2026-01-01T00:00:00Z",
    }
    folder = ceremony.stage(store, intent)  # phase 1 done; the process "dies" here
    assert not (folder / "audit.json").exists() and not crashed.exists()
    out = reclaim(repo, "review-crashed", "r", "a")
    assert out["resumed"] and (folder / "audit.json").is_file()
    assert (folder / "entry" / "note").read_bytes() == b"residue"
    assert os.listdir(store_root(repo) / ".quarantine") == [folder.name]

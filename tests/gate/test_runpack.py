"""Export and independent verification: four separate properties, and tampering found —
a flipped byte, reordered hashes, a missing file, a changed spec, and a consistent forgery
(every hash recomputed) of an evaluation that no longer replays."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from factory.documents.canonical import canonical_bytes, sha256_hex, tagged_sha256
from factory.gate.evaluate import EVALUATION_SCHEMA, candidate_id
from factory.gate.runpack import export, root_hash
from factory.gate.state import entry_hash
from factory.gate.verify import verify
from tests.gate.helpers import (
    NOW,
    condition,
    new_gate,
    observation,
    scenario,
    started,
    two_stages,
)
from tests.support.cli import run_factory


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    sc = two_stages()
    gate = new_gate(tmp_path)
    run = started(gate, sc)
    gate.submit(run, "e1", observation("c1", 0))
    step = gate.accept(run, gate.derive(run))
    assert step.run is not None
    gate.submit(step.run, "e2", observation("c2", 0))
    done = gate.accept(step.run, gate.derive(step.run))
    assert done.run is not None and done.run.state.scenario_completed
    out = tmp_path / "pack"
    export(gate, done.run, out)
    return out


def check(folder: Path, **kw: Any) -> dict[str, Any]:
    return verify(folder, now=NOW + 10**9, **kw)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {k: v["status"] for k, v in report["properties"].items()}


def test_an_untouched_pack_verifies_with_four_separate_properties(pack: Path) -> None:
    report = check(pack)
    assert report["ok"]
    assert statuses(report) == {
        "record_integrity": "pass",
        "source_authenticity": "not-applicable",
        "freshness": "pass",
        "replay_agreement": "pass",
    }
    assert report["properties"]["replay_agreement"]["checked"] == 2


def test_a_flipped_byte_fails_integrity(pack: Path) -> None:
    target = next((pack / "evidence").iterdir())
    data = bytearray(target.read_bytes())
    data[10] ^= 0x01
    target.write_bytes(bytes(data))
    report = check(pack)
    assert not report["ok"] and statuses(report)["record_integrity"] == "fail"


def _manifest(pack: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((pack / "manifest.json").read_bytes())
    return manifest


def _write_manifest(pack: Path, manifest: dict[str, Any]) -> None:
    (pack / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")


def test_reordered_hashes_fail_integrity_even_with_a_recomputed_root(pack: Path) -> None:
    manifest = _manifest(pack)
    manifest["files"] = list(reversed(manifest["files"]))
    _write_manifest(pack, manifest)
    assert "root_hash" in " ".join(check(pack)["properties"]["record_integrity"]["problems"])
    manifest["root_hash"] = root_hash(manifest["files"])
    _write_manifest(pack, manifest)
    report = check(pack)
    assert "canonical order" in " ".join(report["properties"]["record_integrity"]["problems"])


def test_a_missing_file_fails_integrity(pack: Path) -> None:
    (pack / "evaluations.jsonl").unlink()
    report = check(pack)
    assert statuses(report)["record_integrity"] == "fail"
    assert statuses(report)["replay_agreement"] == "fail"


def test_an_unlisted_file_fails_integrity(pack: Path) -> None:
    (pack / "extra.txt").write_text("hi")
    assert "not listed" in " ".join(check(pack)["properties"]["record_integrity"]["problems"])


def _reseal(pack: Path) -> None:
    """Recompute every file hash and the root, as a careful forger would."""
    manifest = _manifest(pack)
    for row in manifest["files"]:
        data = (pack / row["path"]).read_bytes()
        row.update(sha256=sha256_hex(data), bytes=len(data))
    manifest["root_hash"] = root_hash(manifest["files"])
    _write_manifest(pack, manifest)


def test_a_changed_spec_is_caught_by_the_spec_hash(pack: Path) -> None:
    path = pack / "scenario.json"
    doc = json.loads(path.read_bytes())
    doc["conditions"][1]["operand"] = 7
    path.write_bytes(json.dumps(doc).encode())
    _reseal(pack)
    report = check(pack)
    assert statuses(report)["record_integrity"] == "fail"
    assert "spec_hash" in " ".join(report["properties"]["record_integrity"]["problems"])


def _forge_history(pack: Path, evaluations: list[bytes]) -> None:
    """Rewrite evaluations and re-chain the history so every hash is consistent."""
    entries = [json.loads(line) for line in (pack / "history.jsonl").read_bytes().splitlines()]
    prev = entries[0]["hash"]
    for entry, line in zip(entries[1:], evaluations, strict=True):
        entry["prev"] = prev
        entry["body"]["evaluation"] = tagged_sha256(EVALUATION_SCHEMA, line)
        entry["body"]["candidate"] = candidate_id(prev, entry["body"]["evaluation"])
        entry["body"]["request"] = entry["body"]["candidate"]
        entry["hash"] = entry_hash(entry["run"], entry["seq"], prev, entry["body"])
        prev = entry["hash"]
    (pack / "history.jsonl").write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in entries))
    (pack / "evaluations.jsonl").write_bytes(b"".join(line + b"\n" for line in evaluations))
    manifest = _manifest(pack)
    manifest["head"] = {"seq": entries[-1]["seq"], "hash": prev}
    _write_manifest(pack, manifest)
    _reseal(pack)


def test_a_consistent_forgery_that_no_longer_replays_fails_only_replay(pack: Path) -> None:
    lines = (pack / "evaluations.jsonl").read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    # Claim the first condition resolved "present"/"true" from a record id that differs.
    records[0]["conditions"][0]["value"] = "1"
    forged = [canonical_bytes(r) for r in records]
    # the second evaluation's base head changes with the re-chained history
    entries = [json.loads(x) for x in (pack / "history.jsonl").read_bytes().splitlines()]
    _forge_history(pack, forged)
    new_entries = [json.loads(x) for x in (pack / "history.jsonl").read_bytes().splitlines()]
    assert new_entries[1]["hash"] != entries[1]["hash"]
    report = check(pack)
    assert statuses(report)["record_integrity"] == "pass"
    assert statuses(report)["replay_agreement"] == "fail"
    assert not report["ok"]


def test_freshness_fails_on_an_old_export_when_asked(pack: Path) -> None:
    report = verify(pack, now=NOW + 7200 * 10**9, max_age_s=3600)
    assert statuses(report)["freshness"] == "fail"
    assert statuses(report)["record_integrity"] == "pass"


def test_an_unknown_manifest_version_fails(pack: Path) -> None:
    manifest = _manifest(pack)
    manifest["schema"] = "factory.gate-runpack/9"
    _write_manifest(pack, manifest)
    assert statuses(check(pack))["record_integrity"] == "fail"


def test_a_copy_elsewhere_still_verifies(pack: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(pack, copy)
    assert check(copy)["ok"]


def test_signed_evidence_is_reported_as_source_authenticity(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from factory.gate.evidence import Signature, signed_message

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    keys = {"ci": {"ed25519": base64.b64encode(public).decode()}}
    sc = scenario([condition("c1", policy={"signed_by": ["ci"]})], keys=keys)
    gate = new_gate(tmp_path)
    run = started(gate, sc)
    payload = observation("c1", 0)
    gate.submit(run, "e1", payload, Signature("ci", key.sign(signed_message(payload))))
    done = gate.accept(run, gate.derive(run))
    assert done.run is not None and done.run.state.scenario_completed
    out = tmp_path / "pack"
    export(gate, done.run, out)
    report = check(out)
    assert report["ok"] and report["properties"]["source_authenticity"]["verified"] == 1
    assert statuses(report)["source_authenticity"] == "pass"
    index = out / "evidence.jsonl"
    row = json.loads(index.read_bytes())
    row["signature"]["ed25519"] = base64.b64encode(key.sign(b"something else")).decode()
    index.write_bytes(canonical_bytes(row) + b"\n")
    _reseal(out)
    report = check(out)
    assert statuses(report)["record_integrity"] == "pass"
    assert statuses(report)["source_authenticity"] == "fail"
    assert statuses(report)["replay_agreement"] == "fail"  # the evaluation named the old one


def test_a_duplicated_request_id_in_a_resealed_history_fails_integrity(pack: Path) -> None:
    entries = [json.loads(x) for x in (pack / "history.jsonl").read_bytes().splitlines()]
    entries[2]["body"]["request"] = entries[1]["body"]["request"]
    prev = entries[1]["hash"]
    entries[2]["prev"] = prev
    entries[2]["hash"] = entry_hash(entries[2]["run"], entries[2]["seq"], prev, entries[2]["body"])
    (pack / "history.jsonl").write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in entries))
    manifest = _manifest(pack)
    manifest["head"] = {"seq": entries[-1]["seq"], "hash": entries[-1]["hash"]}
    _write_manifest(pack, manifest)
    _reseal(pack)
    report = check(pack)
    assert statuses(report)["record_integrity"] == "fail"
    assert "reuses request id" in " ".join(report["properties"]["record_integrity"]["problems"])


def test_an_export_that_cannot_finish_leaves_a_failure_note(pack: Path, tmp_path: Path) -> None:
    from factory.errors import Failure
    from factory.gate import runpack

    out = tmp_path / "half"
    files = {"history.jsonl": b"x", "no-such-folder/file": b"y"}
    with pytest.raises(Failure, match="could not be written"):
        runpack._write(out, files, b"{}")
    assert (out / runpack.FAILED).is_file() and not (out / runpack.MANIFEST).exists()
    assert statuses(check(out))["record_integrity"] == "fail"


# Tamperings of the last stored evaluation that Python's parsed-value equality cannot see
# (``1 == True``, ``1.0 == 1``, dicts ignore key order): each is resealed consistently
# (evaluation digest, candidate, chain, manifest) so only replay agreement can catch it.
TAMPERINGS = [
    ("true-as-1", b'"scenario_complete":true', b'"scenario_complete":1'),
    ("false-as-0", b'"run_completed_before":false', b'"run_completed_before":0'),
    ("1-as-1.0", b'"seq":1}', b'"seq":1.0}'),
    ("1-as-1e0", b'"seq":1}', b'"seq":1e0}'),
    ("a-key-out-of-order", b'{"base":', b'{"run":"r1","base":'),
    ("insignificant-whitespace", b'"seq":1}', b'"seq": 1}'),
    ("an-escaped-letter", b'"run":"r1"', b'"run":"\\u00721"'),
]


def _tamper_last(pack: Path, old: bytes, new: bytes) -> tuple[bytes, bytes]:
    lines = (pack / "evaluations.jsonl").read_bytes().splitlines()
    last = lines[-1].replace(old, new, 1)
    if new.startswith(b'{"run":"r1",'):  # moved, not added: drop the canonical one
        last = last.replace(b',"run":"r1","run_completed_before"', b',"run_completed_before"')
    assert last != lines[-1]
    _forge_history(pack, [*lines[:-1], last])
    return lines[-1], last


def _verify_cli(pack: Path) -> tuple[int, dict[str, Any], str]:
    proc = run_factory(["gate", "verify", str(pack), "--now", "2026-01-01T00:10:01Z"])
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


@pytest.mark.parametrize(("name", "old", "new"), TAMPERINGS, ids=[t[0] for t in TAMPERINGS])
def test_a_stored_evaluation_equal_only_as_parsed_values_is_a_disagreement(
    pack: Path, name: str, old: bytes, new: bytes
) -> None:
    original, tampered = _tamper_last(pack, old, new)
    assert json.loads(tampered) == json.loads(original)  # what parsed equality accepted
    code, report, err = _verify_cli(pack)
    assert code == 4 and not report["ok"] and "gate-runpack-not-verified" in err
    assert statuses(report)["record_integrity"] == "pass"
    assert statuses(report)["replay_agreement"] == "fail"
    (problem,) = report["properties"]["replay_agreement"]["problems"]
    at = next(i for i, (a, b) in enumerate(zip(original, tampered, strict=False)) if a != b)
    assert problem.startswith("entry 2: replay disagrees with the recorded evaluation")
    assert "not its canonical (RFC 8785) bytes" in problem and f"at byte {at}," in problem


def test_twin_the_same_reseal_with_the_stored_bytes_kept_verifies(pack: Path) -> None:
    lines = (pack / "evaluations.jsonl").read_bytes().splitlines()
    _forge_history(pack, lines)  # every hash recomputed over the untouched bytes
    code, report, _ = _verify_cli(pack)
    assert code == 0 and report["ok"]
    assert report["properties"]["replay_agreement"] == {
        "status": "pass", "checked": 2, "problems": []
    }  # fmt: skip


def test_another_evaluation_is_named_as_such(pack: Path) -> None:
    _tamper_last(pack, b'"value":"0"', b'"value":"7"')
    (problem,) = check(pack)["properties"]["replay_agreement"]["problems"]
    assert "(a different evaluation)" in problem
    assert '"value":"7"' in problem and '"value":"0"' in problem  # recorded, then replay


def test_an_accepted_delta_equal_only_as_parsed_values_is_a_disagreement(pack: Path) -> None:
    entries = [json.loads(x) for x in (pack / "history.jsonl").read_bytes().splitlines()]
    delta = entries[2]["body"]["delta"]
    assert delta["scenario_complete"] is True
    delta["scenario_complete"] = 1  # the laws read it as true; the evaluation says true
    entries[2]["hash"] = entry_hash("r1", 2, entries[2]["prev"], entries[2]["body"])
    (pack / "history.jsonl").write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in entries))
    manifest = _manifest(pack)
    manifest["head"] = {"seq": 2, "hash": entries[2]["hash"]}
    _write_manifest(pack, manifest)
    _reseal(pack)
    report = check(pack)
    assert statuses(report)["record_integrity"] == "pass"
    problems = report["properties"]["replay_agreement"]["problems"]
    assert problems == ["entry 2: the accepted delta is not the evaluation's"]

"""Verification and its evidence gate (SPEC B-4, B-5), with the negative controls."""

from __future__ import annotations

import json
from pathlib import Path

from factory.bus.log import LOG_NAME, fixed_point
from factory.bus.verify import CHECKS, RICHNESS, Check, verify
from factory.errors import ExitCode
from tests.bus.helpers import bus, call, lines, rich_log, write_lines
from tests.support.cli import run_factory


def failed(report: dict) -> set[str]:  # type: ignore[type-arg]
    return {c["id"] for c in report["checks"] if not c["ok"]}


def test_rich_log_passes_every_check_and_verification_is_read_only(tmp_path: Path) -> None:
    rich_log(tmp_path)
    before = (tmp_path / LOG_NAME).read_bytes()
    report = verify(tmp_path, as_evidence=True).to_json_value()
    assert report["ok"] and report["evidenceOk"] and not failed(report)
    measured = fixed_point(tmp_path).to_json_value()
    assert report["fixedPoint"] == report["fixedPointAfter"] == measured
    assert (tmp_path / LOG_NAME).read_bytes() == before
    assert {g["id"] for g in report["evidenceGatesResult"]} == {c["id"] for c in report["checks"]}


def test_single_actor_log_fails_only_as_evidence(tmp_path: Path) -> None:
    log = bus(tmp_path)
    me = call(log, "register", name="solo", kind="worker")["ref"]
    call(log, "send", **{"from": me, "to": me, "text": "note to self"})
    plain = verify(tmp_path).to_json_value()
    assert plain["ok"]  # integrity holds; richness does not gate without the claim
    assert not plain["evidenceOk"]
    evidence = verify(tmp_path, as_evidence=True).to_json_value()
    assert not evidence["ok"]
    assert {"actors-at-least-3", "actor-kinds-at-least-2", "handoff-at-least-1"} <= failed(evidence)
    assert failed(evidence) <= RICHNESS


def test_handoff_tampered_to_transfer_authority_fails(tmp_path: Path) -> None:
    rich_log(tmp_path)
    events = lines(tmp_path)
    next(e for e in events if e["type"] == "work.handed-off")["authorityTransferred"] = ["approve"]
    write_lines(tmp_path, events)
    report = verify(tmp_path).to_json_value()
    assert not report["ok"]
    assert {"log-replays", "handoffs-transfer-no-authority"} <= failed(report)


def test_widened_authority_set_fails(tmp_path: Path) -> None:
    rich_log(tmp_path)
    events = lines(tmp_path)
    events[0]["busAuthority"] = [*events[0]["busAuthority"], "merge"]
    write_lines(tmp_path, events)
    report = verify(tmp_path).to_json_value()
    assert not report["ok"]
    assert {"log-replays", "bus-authority-frozen"} <= failed(report)


def test_never_grantable_grant_and_unlabelled_body_fail_their_checks(tmp_path: Path) -> None:
    rich_log(tmp_path)
    events = lines(tmp_path)
    sent = next(e for e in events if e["type"] == "message.sent")
    sent["message"]["authority"]["granted"] = ["read", "push"]
    sent["message"]["trust"] = "trusted"
    write_lines(tmp_path, events)
    report = verify(tmp_path).to_json_value()
    assert {"no-never-grantable-authority", "bodies-labelled-untrusted"} <= failed(report)


def test_a_check_added_later_gates_by_default(tmp_path: Path) -> None:
    rich_log(tmp_path)
    late = Check("added-later", lambda scan: (False, "always fails"))
    report = verify(tmp_path, checks=(*CHECKS, late)).to_json_value()
    entry = next(c for c in report["checks"] if c["id"] == "added-later")
    assert entry["gates"] and not report["ok"]
    # Negative control: the same log without the new check passes.
    assert verify(tmp_path).ok


def test_cli_verify_prints_json_and_exit_codes(tmp_path: Path) -> None:
    rich_log(tmp_path)
    ok = run_factory(["bus", "verify", "--data-dir", str(tmp_path), "--as-evidence"])
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["format"] == "factory.bus-verification/1" and report["evidenceOk"]
    assert report["fixedPoint"] == fixed_point(tmp_path).to_json_value()
    solo = tmp_path / "solo"
    log = bus(solo)
    call(log, "register", name="solo", kind="worker")
    assert run_factory(["bus", "verify", "--data-dir", str(solo)]).returncode == 0
    failing = run_factory(["bus", "verify", "--data-dir", str(solo), "--as-evidence"])
    assert failing.returncode == ExitCode.FAILURE
    assert json.loads(failing.stdout)["evidenceOk"] is False
    assert b"verification-failed" in failing.stderr
    missing = run_factory(["bus", "verify", "--data-dir", str(tmp_path / "nowhere")])
    assert missing.returncode == ExitCode.USAGE and missing.stdout == b""
    dup = run_factory(["bus", "verify", "--data-dir", "a", "--data-dir", "b"])
    assert dup.returncode == ExitCode.USAGE


def test_verification_keeps_no_message_bodies(tmp_path: Path) -> None:
    from factory.bus.verify import scan_log

    log = rich_log(tmp_path)
    call(log, "send", **{"from": "act-0001", "to": "act-0003", "text": "pending, never acked"})
    with open(tmp_path / LOG_NAME, "rb") as f:
        scan = scan_log(f)
    assert scan.replay_error is None and scan.state.messages
    assert all(m.body is None for m in scan.state.messages.values())
    # Negative control: the live state a server keeps does hold the pending text.
    assert any(m.body is not None for m in log.state().messages.values())

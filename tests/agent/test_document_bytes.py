"""The receipt verification (``factory.receipt-verification/1``) and the demo report
(``factory.demo-report/1``) keep their exact bytes (issue 10 §1), pinned in ``golden/``.

The receipts are built by hand with fixed values, so nothing but the temporary folder
(replaced by ``<tmp>``) varies between runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from factory.agent.evidence import EvidenceStore
from factory.agent.receipt import (
    DECLARED_RESIDUALS,
    AgentReceipt,
    Candidates,
    ErrorRecord,
    PhaseRecord,
    Timings,
    receipt_bytes,
)
from factory.agent.verify import verify
from factory.provider_api import REHEARSAL_EXECUTION
from tests.support.golden import assert_golden, placeholders

GOLDEN = Path(__file__).parent / "golden"
AT = "2026-01-01T00:00:00.000Z"


def _receipt(tmp_path: Path) -> Path:
    """A failed run's receipt with one evidence file, written as factory writes it."""
    path = tmp_path / "receipt.json"
    store = EvidenceStore(tmp_path / "receipt.json.evidence", tmp_path)
    store.claim()
    ref = store.put("worker-stdout", b'{"type":"result"}\n', "application/x-ndjson")
    phase = PhaseRecord(
        phase="worker",
        role="worker",
        profile="claude",
        cli_version="2.1.332 (Claude Code)",
        requested_authority="accept-edits-in-worktree",
        argv_shape=["claude", "-p", "<prompt>"],
        process_exit_code=0,
        observed_postcondition="head-and-index-unchanged; no-candidate-change",
        outcome="no-candidate-change",
        verdict=None,
        reviewed_identity=None,
        binding=None,
        evidence=[ref],
        child_env_names=["HOME", "PATH"],
        started_at=AT,
        ended_at=AT,
        duration_ms=5,
    )
    receipt = AgentReceipt(
        status="failed",
        exit_code=4,
        execution=REHEARSAL_EXECUTION,
        route="rehearsal",
        factory_version="0.1.0",
        task="fix add()",
        worktree="/nonexistent/wt",
        evidence_dir="/nonexistent/receipt.json.evidence",  # bound by the revision: fixed
        timeout_ms=600_000,
        base=None,
        phases=[phase],
        candidate=Candidates(),
        verdict=None,
        error=ErrorRecord(code="no-candidate-change", message="the worker left no change"),
        residuals=list(DECLARED_RESIDUALS),
        timings=Timings(started_at=AT, ended_at=AT, duration_ms=9),
    ).closed()
    path.write_bytes(receipt_bytes(receipt))
    return path


@pytest.mark.parametrize("tampered", [False, True])
def test_receipt_verification_bytes(tmp_path: Path, tampered: bool) -> None:
    path = _receipt(tmp_path)
    if tampered:
        evidence = next((tmp_path / "receipt.json.evidence").iterdir())
        evidence.chmod(0o600)
        evidence.write_bytes(b"edited\n")
    report = verify(path)
    name = "receipt-verification-tampered" if tampered else "receipt-verification"
    assert_golden(GOLDEN / f"{name}.json", placeholders(report.canonical(), tmp=tmp_path))
    # What `factory receipt verify` prints.
    value = report.to_json_value()
    printed = (json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    assert_golden(GOLDEN / f"{name}.printed.json", placeholders(printed, tmp=tmp_path))


def test_demo_report_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from factory.cli import demo_cmd

    # The report's "next" command is written as it works where the user stands: pin where
    # that is (two folders below the receipt, a PATH that finds no python, not under npm),
    # so the bytes do not depend on where the checkout is or how the suite was started
    # (scripts/test puts .venv/bin on PATH).
    user = tmp_path / "you" / "here"
    user.mkdir(parents=True)
    monkeypatch.chdir(user)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    for name in ("INIT_CWD", "npm_lifecycle_event", "npm_lifecycle_script"):
        monkeypatch.delenv(name, raising=False)
    receipt = _receipt(tmp_path)
    args = argparse.Namespace(json=False)
    assert demo_cmd._finish(args, tmp_path, receipt, 4) == 4
    data = (tmp_path / demo_cmd.REPORT_NAME).read_bytes()
    data = placeholders(data, tmp=tmp_path, python=sys.executable)
    assert_golden(GOLDEN / "demo-report.json", data)

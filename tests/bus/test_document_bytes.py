"""The bus's published documents keep their exact bytes (issue 10 §1): the event-log fixed
point (``factory.event-log-fixed-point/1``), the verification (``factory.bus-verification/1``)
and the smoke report (``factory.smoke-report/1``), pinned in ``golden/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.bus import smoke
from factory.bus.log import LOG_NAME, fixed_point
from factory.bus.model import ACK_MEANING, VERBS
from factory.bus.smoke_report import Artifact, SmokeReservation, Trace
from factory.bus.verify import verify
from factory.errors import INTERNAL
from tests.bus.helpers import rich_log
from tests.support.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden"


def _printed(value: object) -> bytes:
    # What `factory bus verify` prints.
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def test_fixed_point_bytes(tmp_path: Path) -> None:
    rich_log(tmp_path / "d")
    assert_golden(GOLDEN / "fixed-point.json", fixed_point(tmp_path / "d").canonical())
    assert_golden(GOLDEN / "fixed-point-empty.json", fixed_point(tmp_path).canonical())


@pytest.mark.parametrize("evidence", [False, True])
def test_bus_verification_bytes(tmp_path: Path, evidence: bool) -> None:
    rich_log(tmp_path / "d")
    report = verify(tmp_path / "d", as_evidence=evidence)
    name = f"bus-verification-{'evidence' if evidence else 'plain'}"
    assert_golden(GOLDEN / f"{name}.json", report.canonical())
    assert_golden(GOLDEN / f"{name}.printed.json", _printed(report.to_json_value()))


def test_bus_verification_bytes_of_a_corrupt_log(tmp_path: Path) -> None:
    rich_log(tmp_path)
    (tmp_path / LOG_NAME).write_bytes((tmp_path / LOG_NAME).read_bytes() + b"{torn")
    assert_golden(GOLDEN / "bus-verification-corrupt.json", verify(tmp_path).canonical())


ARTIFACT = Artifact(path="README.md", bytes=12, sha256="ab" * 32)
TRACE_VALUE = {  # the shape factory.bus.client.exchange returns
    "actors": {
        "coordinator": {"ref": "act-0001", "name": "factory-coordinator", "kind": "coordinator"},
        "builder": {"ref": "act-0002", "name": "factory-builder", "kind": "worker"},
        "reviewer": {"ref": "act-0003", "name": "factory-reviewer", "kind": "reviewer"},
    },
    "messages": [
        {
            "messageId": "msg-0001",
            "correlationId": "cor-0001",
            "from": "act-0001",
            "to": "act-0002",
            "kind": "factory-task",
        }
    ],
    "acknowledgements": [{"messageId": "msg-0001", "ackedBy": "act-0002", "meaning": ACK_MEANING}],
    "handoff": {
        "messageId": "msg-0003",
        "correlationId": "cor-0001",
        "from": "act-0002",
        "to": "act-0003",
        "replyTo": "act-0001",
        "authorityTransferred": [],
    },
    "correlationId": "cor-0001",
    "toolSurface": list(VERBS),
}


TRACE = Trace.model_validate(TRACE_VALUE)


@pytest.mark.parametrize("moved", [False, True])
def test_smoke_report_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moved: bool) -> None:
    monkeypatch.chdir(tmp_path)
    req = smoke.SmokeRequest(Path("d"), Path("README.md"), Path("r.json"), task="Review it")
    rich_log(tmp_path / "d")
    before = fixed_point(tmp_path / "d")
    after = before.model_copy(update={"events": before.events + 1}) if moved else before
    checked = verify(tmp_path / "d", as_evidence=True)
    report = smoke.build_report(req, ARTIFACT, TRACE, before, after, checked)
    name = "smoke-report-moved" if moved else "smoke-report"
    assert_golden(GOLDEN / f"{name}.json", report.data())


@pytest.mark.parametrize(
    ("name", "exc", "owns"),
    [
        ("failed", INTERNAL("x"), True),
        ("claimed", smoke.DATA_DIR_CLAIMED("data dir d was claimed by another run first"), False),
        ("interrupted", KeyboardInterrupt(), True),
        ("bug", RuntimeError("x"), False),
    ],
)
def test_smoke_terminal_report_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, exc: BaseException, owns: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    if owns:
        rich_log(tmp_path / "d")
    req = smoke.SmokeRequest(Path("d"), Path("README.md"), Path("r.json"))
    status = "failed"
    _, data = smoke._terminal(req, ARTIFACT, status, exc, owns_dir=owns)
    assert data == (tmp_path / "r.json").read_bytes()
    assert_golden(GOLDEN / f"smoke-terminal-{name}.json", data)
    running = SmokeReservation(ok=False, data_dir="d", artifact=ARTIFACT, task=req.task)
    assert_golden(GOLDEN / "smoke-running.json", running.data())

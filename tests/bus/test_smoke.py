"""``factory smoke`` end to end (SPEC B-6) and its refusals (exit 2, nothing touched)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factory.bus.log import LOG_NAME
from factory.bus.smoke_report import Trace, TraceActor, TraceHandoff
from factory.errors import ExitCode
from tests.support.cli import run_factory

REPO = Path(__file__).resolve().parents[2]


def smoke(
    tmp: Path, *extra: str, data: str = "smoke", out: str = "report.json"
) -> subprocess.CompletedProcess[bytes]:
    return run_factory(
        ["smoke", "--data-dir", data, "--artifact", str(REPO / "README.md"), "--out", out, *extra],
        cwd=tmp,
    )


def test_smoke_succeeds_and_verify_rederives_its_evidence_log(tmp_path: Path) -> None:
    proc = smoke(tmp_path, "--task", "Review this candidate")
    assert proc.returncode == 0, proc.stderr.decode()
    persisted = (tmp_path / "report.json").read_bytes()
    assert proc.stdout == persisted
    report = json.loads(persisted)
    assert report["format"] == "factory.smoke-report/1"
    assert report["ok"] is True and report["status"] == "completed"
    assert report["command"] == "factory smoke"
    assert report["execution"] == "coordination-tracer; no code execution"
    assert report["task"] == "Review this candidate" and report["dataDir"] == "smoke"
    readme = (REPO / "README.md").read_bytes()
    assert report["artifact"]["bytes"] == len(readme)
    assert report["toolSurface"] == ["ack", "handoff", "heartbeat", "inbox", "register", "send"]
    assert report["handoff"]["authorityTransferred"] == []
    assert {a["meaning"] for a in report["acknowledgements"]} == {
        "receipt only: not agreement, approval or completion"
    }
    assert len(report["acknowledgements"]) == 4 and len(report["messages"]) == 3
    assert {m["correlationId"] for m in report["messages"]} == {report["correlationId"]}
    v = report["verification"]
    assert v["ok"] and v["evidenceOk"] and all(g["ok"] for g in v["evidenceGatesResult"])
    assert report["evidenceLog"]["events"] == 16
    verify = run_factory(["bus", "verify", "--data-dir", str(tmp_path / "smoke"), "--as-evidence"])
    assert verify.returncode == 0
    assert json.loads(verify.stdout)["fixedPoint"] == report["evidenceLog"]

    # A rerun on the same data dir is refused and appends nothing.
    log_bytes = (tmp_path / "smoke" / LOG_NAME).read_bytes()
    again = smoke(tmp_path, out="again.json")
    assert again.returncode == ExitCode.USAGE and again.stdout == b""
    assert b"data-dir-exists" in again.stderr
    assert not (tmp_path / "again.json").exists()
    assert (tmp_path / "smoke" / LOG_NAME).read_bytes() == log_bytes


def _refusal_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    (tmp / "existing.json").write_bytes(b"keep me")
    (tmp / "taken").mkdir()
    (tmp / "folder").mkdir()
    os.symlink(REPO / "README.md", tmp / "link.md")
    os.mkfifo(tmp / "fifo")
    os.symlink(tmp / "taken", tmp / "alias")
    (tmp / "a\udcff.md").write_bytes(b"an artifact whose name is not UTF-8")
    readme = str(REPO / "README.md")
    return {
        "existing report": (
            ["--data-dir", "d", "--artifact", readme, "--out", "existing.json"],
            "output-exists",
        ),
        "report inside the data dir": (
            ["--data-dir", "d", "--artifact", readme, "--out", "d/report.json"],
            "report-inside-data-dir",
        ),
        "report inside the data dir through a symlinked alias": (
            ["--data-dir", "taken", "--artifact", readme, "--out", "alias/r.json"],
            "report-inside-data-dir",
        ),
        "missing artifact": (
            ["--data-dir", "d", "--artifact", "nope.md", "--out", "r.json"],
            "artifact-missing",
        ),
        "artifact is a folder": (
            ["--data-dir", "d", "--artifact", "folder", "--out", "r.json"],
            "artifact-not-regular",
        ),
        "artifact is a symlink": (
            ["--data-dir", "d", "--artifact", "link.md", "--out", "r.json"],
            "artifact-not-regular",
        ),
        "artifact is a FIFO": (
            ["--data-dir", "d", "--artifact", "fifo", "--out", "r.json"],
            "artifact-not-regular",
        ),
        "existing data dir": (
            ["--data-dir", "taken", "--artifact", readme, "--out", "r.json"],
            "data-dir-exists",
        ),
        "data dir folder missing": (
            ["--data-dir", "no/such/d", "--artifact", readme, "--out", "r.json"],
            "data-dir-parent-missing",
        ),
        "data dir folder is a file": (
            ["--data-dir", "existing.json/d", "--artifact", readme, "--out", "r.json"],
            "data-dir-parent-missing",
        ),
        "report folder missing": (
            ["--data-dir", "d", "--artifact", readme, "--out", "no/such/r.json"],
            "report-folder-missing",
        ),
        "report folder is a file": (
            ["--data-dir", "d", "--artifact", readme, "--out", "existing.json/r.json"],
            "report-folder-missing",
        ),
        "blank task": (
            ["--data-dir", "d", "--artifact", readme, "--out", "r.json", "--task", " "],
            "bad-task",
        ),
        # 16,384 characters but 64 KiB as JSON: its message line would not fit the log.
        "task too large in bytes": (
            [
                "--data-dir",
                "d",
                "--artifact",
                readme,
                "--out",
                "r.json",
                "--task",
                "\U0001f600" * 16_384,
            ],
            "bad-task",
        ),
        "task not UTF-8": (
            ["--data-dir", "d", "--artifact", readme, "--out", "r.json", "--task", "bad\udcffbyte"],
            "argument-not-utf8",
        ),
        "artifact name not UTF-8": (
            ["--data-dir", "d", "--artifact", "a\udcff.md", "--out", "r.json"],
            "argument-not-utf8",
        ),
        "report inside the data dir through ..": (
            ["--data-dir", "folder/../d", "--artifact", readme, "--out", "d/../d/r.json"],
            "report-inside-data-dir",
        ),
        "unknown flag": (
            ["--data-dir", "d", "--artifact", readme, "--out", "r.json", "--fast"],
            "usage",
        ),
        "duplicate flag": (
            ["--data-dir", "d", "--data-dir", "e", "--artifact", readme, "--out", "r.json"],
            "duplicate-flag",
        ),
    }


CASES = [
    "existing report",
    "report inside the data dir",
    "report inside the data dir through a symlinked alias",
    "missing artifact",
    "artifact is a folder",
    "artifact is a symlink",
    "artifact is a FIFO",
    "existing data dir",
    "data dir folder missing",
    "data dir folder is a file",
    "report folder missing",
    "report folder is a file",
    "blank task",
    "task too large in bytes",
    "task not UTF-8",
    "artifact name not UTF-8",
    "report inside the data dir through ..",
    "unknown flag",
    "duplicate flag",
]


@pytest.mark.parametrize("name", CASES)
def test_refusals_exit_2_and_touch_nothing(tmp_path: Path, name: str) -> None:
    args, code = _refusal_cases(tmp_path)[name]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_factory(["smoke", *args], cwd=tmp_path, timeout=60)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert proc.stdout == b""
    assert f": {code}: ".encode() in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "existing.json").read_bytes() == b"keep me"
    assert list((tmp_path / "taken").iterdir()) == []


def test_two_concurrent_runs_on_one_data_dir_exactly_one_wins(tmp_path: Path) -> None:
    readme = str(REPO / "README.md")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "factory",
                "smoke",
                "--data-dir",
                "shared",
                "--artifact",
                readme,
                "--out",
                f"r{n}.json",
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(2)
    ]
    results = [(p.wait(timeout=120), p.stdout.read() if p.stdout else b"") for p in procs]
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()
        p.stderr.close()
    # The loser exits 2 when the winner's data dir already existed at its admission, or 4
    # when it lost the mkdir race after reserving its report (design/bus.md).
    assert sorted(code for code, _ in results) in ([0, 2], [0, 4])
    for n, (code, out) in enumerate(results):
        path = tmp_path / f"r{n}.json"
        if code == 0:
            assert out == path.read_bytes() and json.loads(out)["ok"] is True
        elif path.exists():  # lost the mkdir race after reserving: a terminal record
            report = json.loads(path.read_bytes())
            assert out == path.read_bytes()
            assert code == 4 and report["error"]["code"] == "data-dir-claimed"
            assert report["status"] == "failed" and report["evidenceLog"] is None
        else:  # refused at admission: the winner's data dir already existed
            assert out == b""


def test_losing_the_claim_after_reserving_leaves_a_terminal_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import factory.bus.smoke as smoke_mod
    from factory.fsio import OutputExists

    def lose(path: Path) -> None:
        path.mkdir()  # the other run got there first
        raise OutputExists(f"{path} already exists")

    monkeypatch.setattr(smoke_mod, "claim_dir", lose)
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    code, data = smoke_mod.run_smoke(req)
    # After the reservation a refusal is a failure with a terminal record (factory.errors).
    assert code == ExitCode.FAILURE
    report = json.loads(data)
    assert data == (tmp_path / "r.json").read_bytes()
    assert report["status"] == "failed" and report["ok"] is False
    assert report["evidenceLog"] is None and report["error"]["code"] == "data-dir-claimed"
    assert list((tmp_path / "d").iterdir()) == []  # nothing written into the winner's dir


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_npm_script_runs_the_same_command(tmp_path: Path) -> None:
    out = tmp_path / "npm-report.json"
    proc = subprocess.run(
        [
            # Exactly as documented: no --silent; the repo's .npmrc keeps npm's banner off
            # stdout so it still equals the persisted report.
            "npm",
            "run",
            "factory:smoke",
            "--",
            "--data-dir",
            str(tmp_path / "d"),
            "--artifact",
            "README.md",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == out.read_bytes()
    assert json.loads(proc.stdout)["ok"] is True


def _fake_trace(data_dir: Path, *, torn: bool) -> Trace:
    from tests.bus.helpers import bus, call

    log = bus(data_dir)
    me = call(log, "register", name="solo", kind="worker")["ref"]
    if torn:
        with open(data_dir / LOG_NAME, "ab") as f:
            f.write(b'{"at":')
    handoff = TraceHandoff(
        message_id="msg-0001",
        correlation_id="cor-0001",
        sender=me,
        to=me,
        reply_to=me,
        authority_transferred=[],
    )
    return Trace(
        actors={"solo": TraceActor(ref=me, name="solo", kind="worker")},
        messages=[],
        acknowledgements=[],
        handoff=handoff,
        correlation_id="cor-0001",
        tool_surface=["ack", "handoff", "heartbeat", "inbox", "register", "send"],
    )


@pytest.mark.parametrize("torn", [False, True])
def test_failed_evidence_gate_after_admission_exits_4_with_a_terminal_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torn: bool
) -> None:
    import factory.bus.client as client_mod
    import factory.bus.smoke as smoke_mod

    monkeypatch.setattr(client_mod, "run_trace", lambda d, **kw: _fake_trace(d, torn=torn))
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    code, data = smoke_mod.run_smoke(req)
    assert code == ExitCode.FAILURE
    report = json.loads(data)
    assert data == (tmp_path / "r.json").read_bytes()
    assert report["ok"] is False and report["status"] == "failed"
    assert report["error"]["code"] == "evidence-gate-failed"
    assert "actors-at-least-3" in report["error"]["message"]
    if torn:
        assert "log-replays" in report["error"]["message"]
    assert report["evidenceLog"]["events"] == 1  # the torn fragment has no LF


def test_corrupt_log_during_the_trace_exits_4_with_a_terminal_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import factory.bus.client as client_mod
    import factory.bus.smoke as smoke_mod
    from factory.bus.log import TORN_TAIL

    def corrupt(d: Path, **kw: object) -> None:
        raise TORN_TAIL("events.jsonl line 1: torn")

    monkeypatch.setattr(client_mod, "run_trace", corrupt)
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    code, data = smoke_mod.run_smoke(req)
    assert code == ExitCode.FAILURE
    report = json.loads(data)
    assert report["status"] == "failed" and report["error"]["code"] == "torn-tail"
    assert report["evidenceLog"]["events"] == 0  # this run owns the (empty) data dir


def test_sdk_stdio_client_transport_under_trio_gives_the_same_conversation(tmp_path: Path) -> None:
    from factory.bus.smoke import SmokeRequest, run_smoke

    req = SmokeRequest(
        tmp_path / "d", REPO / "README.md", tmp_path / "r.json", "Review this candidate"
    )
    code, data = run_smoke(req, transport="sdk-stdio", backend="trio")
    assert code == 0, data
    report = json.loads(data)
    assert report["ok"] and report["evidenceLog"]["events"] == 16
    assert report["toolSurface"] == ["ack", "handoff", "heartbeat", "inbox", "register", "send"]


@pytest.mark.parametrize(
    ("raised", "status", "code"),
    [
        (KeyboardInterrupt(), "interrupted", "interrupted"),
        (RuntimeError("bug"), "failed", "internal"),
    ],
)
def test_interrupt_or_bug_after_reservation_still_leaves_a_terminal_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: BaseException, status: str, code: str
) -> None:
    import factory.bus.client as client_mod
    import factory.bus.smoke as smoke_mod

    def boom(d: Path, **kw: object) -> None:
        raise raised

    monkeypatch.setattr(client_mod, "run_trace", boom)
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    if isinstance(raised, KeyboardInterrupt):
        exit_code, data = smoke_mod.run_smoke(req)
        assert exit_code == ExitCode.INTERRUPTED and data == (tmp_path / "r.json").read_bytes()
    else:  # a bug propagates to the CLI's crash handler (exit 1) after the record is written
        with pytest.raises(RuntimeError):
            smoke_mod.run_smoke(req)
    report = json.loads((tmp_path / "r.json").read_bytes())
    assert report["ok"] is False and report["status"] == status
    assert report["error"]["code"] == code and report["evidenceLog"]["events"] == 0


def test_sigint_mid_run_exits_130_with_an_interrupted_record_and_no_server_left(
    tmp_path: Path,
) -> None:
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "factory",
            "smoke",
            "--data-dir",
            "d",
            "--artifact",
            str(REPO / "README.md"),
            "--out",
            "r.json",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "d" / "bus-serve.log").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, err.decode()
    report = json.loads((tmp_path / "r.json").read_bytes())
    assert report["status"] == "interrupted" and report["ok"] is False
    assert out == (tmp_path / "r.json").read_bytes()
    import psutil

    servers = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        cmd = p.info["cmdline"] or []
        if "serve" in cmd and p.info["cwd"] == str(tmp_path):
            servers.append(p)
    assert servers == []

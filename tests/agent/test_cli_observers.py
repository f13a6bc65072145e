"""`--progress`, `--otel-endpoint` and `factory receipt show` as users run them (subprocesses).

The real CLI runs with in-process fake profiles (``tests/agent/fake_factory.py``).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_factory
from tests.support.layout import Layout
from tests.support.otlp import http_receiver, refused_port

FAKE = Path(__file__).with_name("fake_factory.py")
TASK = "TASK-SENTINEL-5d1e fix add()"


def agent(layout: Layout, scenario: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    args = [
        "agent",
        "--worktree",
        str(layout.wt),
        "--task",
        TASK,
        "--out",
        str(layout.receipt),
        "--timeout-ms",
        "5000",
        *extra,
    ]
    return subprocess.run(
        [sys.executable, str(FAKE), scenario, "--", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:4318",
        "http://collector.example:4318",
        "http://10.1.2.3:4318",
        "https://127.0.0.1:4318",
        "http://user:hunter2@127.0.0.1:4318",
        "http://127.0.0.1:4318/v1/traces?x=1",
        "http://127.0.0.1:4318/v1/traces#f",
    ],
)
def test_a_refused_endpoint_exits_2_before_any_effect(layout: Layout, url: str) -> None:
    proc = agent(layout, "approve", "--otel-endpoint", url)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert b"otel-endpoint-refused" in proc.stderr
    assert b"hunter2" not in proc.stderr
    assert not layout.receipt.exists() and not layout.evidence.exists()


def test_a_loopback_endpoint_gets_the_spans_negative_control(layout: Layout) -> None:
    with http_receiver() as (port, received):
        proc = agent(layout, "reject", "--otel-endpoint", f"http://127.0.0.1:{port}")
        spans = received.spans()
    assert proc.returncode == 3, proc.stderr
    names = sorted(s["name"].rsplit(".", 1)[1] for s in spans)
    assert names == sorted(["cycle", "worker", "initial_review", "repair", "final_review"])
    cycle = next(s for s in spans if s["name"].endswith(".cycle"))
    assert cycle["attributes"]["factory.exit_code"] == 3
    # A rejection is a verdict, not an error; the receipt names the trace it belongs to.
    assert {s["status"] for s in spans} == {"OK"}
    receipt = json.loads(proc.stdout)
    assert receipt["trace_id"] == cycle["trace_id"]
    assert {s["trace_id"] for s in spans} == {receipt["trace_id"]}


def test_a_failed_run_marks_its_phase_and_cycle_as_errors(layout: Layout) -> None:
    with http_receiver() as (port, received):
        proc = agent(layout, "fail", "--otel-endpoint", f"http://127.0.0.1:{port}")
        spans = received.spans()
    assert proc.returncode == 4, proc.stderr
    receipt = json.loads(proc.stdout)
    code = receipt["error"]["code"]
    errors = {
        s["name"].rsplit(".", 1)[1]: s["status_message"] for s in spans if s["status"] == "ERROR"
    }
    assert errors["cycle"] == code
    failing = receipt["phases"][-1]
    assert errors.get(failing["phase"]) == failing["outcome"]


def test_without_telemetry_the_receipt_has_no_trace_id(layout: Layout) -> None:
    proc = agent(layout, "approve")
    assert proc.returncode == 0
    assert b"trace_id" not in proc.stdout


def test_a_refusing_endpoint_changes_nothing_through_the_cli(layout: Layout) -> None:
    proc = agent(layout, "reject", "--otel-endpoint", f"http://127.0.0.1:{refused_port()}")
    assert proc.returncode == 3, proc.stderr
    receipt = json.loads(proc.stdout)
    assert receipt["status"] == "rejected" and len(receipt["phases"]) == 4


def test_progress_jsonl_on_stderr(layout: Layout) -> None:
    proc = agent(layout, "reject", "--progress", "jsonl")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == layout.receipt.read_bytes()  # stdout stays the receipt
    lines = proc.stderr.decode().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert records and all(r["schema"] == "factory.agent-progress/1" for r in records)
    bounds = [r["remaining_provider_time_upper_bound_ms"] for r in records]
    assert bounds[0] == 4 * 5000 and bounds[-1] == 0
    assert all(a >= b for a, b in itertools.pairwise(bounds))
    assert records[-1]["stage"] == "terminal_outcome" and records[-1]["outcome"] == "rejected"
    for forbidden in ("TASK-SENTINEL", str(layout.wt), str(layout.out), str(layout.repo)):
        assert forbidden.encode() not in proc.stderr


def test_progress_human_is_plain_lines_off_a_terminal(layout: Layout) -> None:
    proc = agent(layout, "approve")  # --progress human is the default
    assert proc.returncode == 0, proc.stderr
    text = proc.stderr.decode()
    assert "\x1b" not in text
    lines = [line for line in text.splitlines() if line.startswith("factory agent |")]
    assert lines and all(line.endswith("(not an ETA)") for line in lines)
    assert lines[-1].startswith("factory agent | finished: completed |")
    assert "TASK-SENTINEL" not in text


def test_receipt_show_renders_a_real_receipt(layout: Layout) -> None:
    assert agent(layout, "reject").returncode == 3
    proc = run_factory(["receipt", "show", str(layout.receipt)])
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "REJECTED" in text
    for phase in ("worker", "initial_review", "repair", "final_review"):
        assert phase in text
    assert "REQUEST_CHANGES" in text and "src/app.py" in text
    assert text.startswith("Run REJECTED — receipt intact\nintegrity: VERIFIED revision, canonical")
    assert "REHEARSAL" not in text  # the fake run is on the subscription route


def test_receipt_show_refuses_an_invalid_receipt(layout: Layout) -> None:
    assert agent(layout, "approve").returncode == 0
    value = json.loads(layout.receipt.read_bytes())
    value["status"] = "approved"
    bad = layout.out / "bad.json"
    bad.write_text(json.dumps(value))
    proc = run_factory(["receipt", "show", str(bad)])
    assert proc.returncode == 4 and proc.stdout == b""
    assert b"Traceback" not in proc.stderr


def test_progress_on_a_terminal_draws_a_live_line_and_keeps_stdout_clean(layout: Layout) -> None:
    import os
    import pty
    import threading

    main_fd, tty_fd = pty.openpty()
    args = ["agent", "--worktree", str(layout.wt), "--task", TASK, "--out", str(layout.receipt)]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    chunks: list[bytes] = []

    def drain() -> None:  # read while the child writes, so a full pty buffer cannot block it
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "approve", "--", *args],
        stdout=subprocess.PIPE,
        stderr=tty_fd,
        env=env,
    )
    os.close(tty_fd)
    stdout, _ = proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(main_fd)
    seen = b"".join(chunks)
    assert proc.returncode == 0
    assert stdout == layout.receipt.read_bytes()  # the live line never reaches stdout
    assert b"\x1b[" in seen  # cursor control: a live region on the terminal
    assert b"finished: completed" in seen and b"(not an ETA)" in seen
    assert b"TASK-SENTINEL" not in seen

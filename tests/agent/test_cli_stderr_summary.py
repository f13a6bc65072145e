"""What ``factory agent`` says on stderr beyond progress (human mode only): a REHEARSAL
banner first and last on the rehearsal route, and the typed error of a failed run (observed:
a run without a login ended with only "finished: failed")."""

from __future__ import annotations

import json
from pathlib import Path

from factory.cli.agent_cmd import REHEARSAL_BANNER, error_line
from tests.agent.cli_helpers import agent_args, fake
from tests.support.cli import run_factory
from tests.support.layout import Layout

SCENARIO = Path(__file__).resolve().parents[2] / "factory" / "demo" / "scenario.json"


def lines(stderr: bytes) -> list[str]:
    return stderr.decode().splitlines()


def test_rehearsal_run_is_bannered_first_and_last(layout: Layout) -> None:
    # The fake profiles never call the scripted model, so the script stays unconsumed: the
    # run fails, and stderr says why.
    proc = fake("approve", agent_args(layout, "--rehearsal", str(SCENARIO)))
    out = lines(proc.stderr)
    assert out[0] == REHEARSAL_BANNER and out[-1] == REHEARSAL_BANNER, out
    assert proc.returncode == 4
    assert "factory: rehearsal-scenario-unconsumed: " in out[-2]
    assert proc.stdout == layout.receipt.read_bytes()
    # verify says it too, in its JSON and on stderr (twin: the real-route test below)
    checked = run_factory(["receipt", "verify", str(layout.receipt)])
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["route"] == "rehearsal"
    assert checked.stderr.startswith(b"factory: REHEARSAL receipt: ")


def test_a_refused_rehearsal_shows_no_banner(layout: Layout) -> None:
    # Refused before any rehearsal runs (the receipt path is taken): the refusal alone.
    layout.receipt.write_bytes(b"mine\n")
    proc = fake("approve", agent_args(layout, "--rehearsal", str(SCENARIO)))
    assert proc.returncode == 2, proc.stderr
    assert REHEARSAL_BANNER not in proc.stderr.decode()
    assert lines(proc.stderr)[-1].startswith("factory: ")
    assert layout.receipt.read_bytes() == b"mine\n"


def test_real_route_receipt_verifies_without_a_rehearsal_note(layout: Layout) -> None:
    assert fake("approve", agent_args(layout)).returncode == 0
    checked = run_factory(["receipt", "verify", str(layout.receipt)])
    assert checked.returncode == 0 and checked.stderr == b""
    assert json.loads(checked.stdout)["route"] == "subscription"


def test_real_route_success_has_no_banner_and_no_error_line(layout: Layout) -> None:
    proc = fake("approve", agent_args(layout))
    assert proc.returncode == 0
    assert REHEARSAL_BANNER not in proc.stderr.decode()
    assert not any(line.startswith("factory: ") for line in lines(proc.stderr))


def test_failed_run_names_its_error_on_stderr(layout: Layout) -> None:
    proc = fake("fail", agent_args(layout))
    assert proc.returncode == 4
    error = json.loads(proc.stdout)["error"]
    assert lines(proc.stderr)[-1] == f"factory: {error['code']}: {error['message']}"
    assert b"fix add()" not in proc.stderr


def test_jsonl_progress_keeps_stderr_json_only(layout: Layout) -> None:
    proc = fake("fail", agent_args(layout, "--progress", "jsonl", "--rehearsal", str(SCENARIO)))
    assert proc.returncode == 4
    assert all(json.loads(line)["schema"] for line in lines(proc.stderr))


def test_error_line_is_none_without_an_error() -> None:
    assert error_line(b'{"error": null}') is None
    assert error_line(b"not json") is None
    assert error_line(b'{"error": {"code": "x-y", "message": "m"}}') == "factory: x-y: m"


def test_error_line_escapes_control_characters() -> None:
    raw = b'{"error": {"code": "provider-failed", "message": "bad \\u001b[31mred\\nnext"}}'
    assert error_line(raw) == "factory: provider-failed: bad \\x1b[31mred\\x0anext"

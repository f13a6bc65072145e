"""``factory bus <verb>``: the same core as the MCP tools, from a shell (SPEC B-2)."""

from __future__ import annotations

import json
from pathlib import Path

from factory.bus.log import LOG_NAME
from factory.errors import ExitCode
from tests.bus.helpers import lines
from tests.support.cli import run_factory


def bus(d: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = run_factory(["bus", args[0], "--data-dir", str(d), *args[1:]], timeout=60)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout else {})


def test_verbs_round_trip_and_a_refusal_is_recorded_with_exit_3(tmp_path: Path) -> None:
    assert bus(tmp_path, "register", "--name", "a", "--kind", "worker")[1]["ref"] == "act-0001"
    assert bus(tmp_path, "register", "--name", "b", "--kind", "reviewer")[1]["ref"] == "act-0002"
    code, sent = bus(
        tmp_path, "send", "--from", "act-0001", "--to", "act-0002", "--text=--starts-with-dashes"
    )
    assert code == 0 and sent["messageId"] == "msg-0001"
    code, inbox = bus(tmp_path, "inbox", "--actor", "act-0002")
    assert inbox["messages"][0]["text"] == "--starts-with-dashes"
    code, out = bus(tmp_path, "ack", "--actor", "act-0001", "--message-id", "msg-0001")
    assert code == ExitCode.REJECTED and out == {}
    assert lines(tmp_path)[-1]["reason"] == "ack-not-recipient"
    code, acked = bus(tmp_path, "ack", "--actor", "act-0002", "--message-id", "msg-0001")
    assert code == 0 and acked["meaning"].startswith("receipt only")


def test_a_verb_on_a_corrupt_log_exits_4_and_appends_nothing(tmp_path: Path) -> None:
    assert bus(tmp_path, "register", "--name", "a", "--kind", "worker")[0] == 0
    with open(tmp_path / LOG_NAME, "ab") as f:
        f.write(b"{")
    before = (tmp_path / LOG_NAME).read_bytes()
    assert bus(tmp_path, "heartbeat", "--actor", "act-0001")[0] == ExitCode.FAILURE
    assert (tmp_path / LOG_NAME).read_bytes() == before


def test_a_data_dir_that_is_a_file_is_refused_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    for argv in (["bus", "heartbeat", "--actor", "act-0001"], ["bus", "serve"]):
        proc = run_factory([*argv, "--data-dir", str(tmp_path / "file")], timeout=60)
        assert proc.returncode == ExitCode.USAGE and b"data-dir-unusable" in proc.stderr
    assert (tmp_path / "file").read_bytes() == b"x"


def test_a_missing_argument_names_the_flags_to_give(tmp_path: Path) -> None:
    # observed: "see fields" pointed at MCP keys a shell user never sees
    proc = run_factory(["bus", "register", "--data-dir", str(tmp_path)], timeout=60)
    assert proc.returncode == ExitCode.REJECTED and proc.stdout == b""
    assert b"factory: fields: --kind, --name" in proc.stderr
    # twin: with the flags given, the same verb succeeds and says nothing about fields
    ok = run_factory(
        ["bus", "register", "--data-dir", str(tmp_path), "--name", "a", "--kind", "worker"],
        timeout=60,
    )
    assert ok.returncode == 0 and b"fields" not in ok.stderr
    assert json.loads(ok.stdout)["ref"] == "act-0001"


def test_every_bus_command_help_says_what_it_does() -> None:
    # observed: `factory bus verify --help` listed flags only
    for sub, says in [("serve", b"MCP tools over stdio"), ("verify", b"Exit 0 when every")]:
        proc = run_factory(["bus", sub, "--help"], timeout=60)
        assert proc.returncode == 0 and says in proc.stdout, proc.stdout
    for verb in ("register", "send", "inbox", "ack", "handoff", "heartbeat"):
        proc = run_factory(["bus", verb, "--help"], timeout=60)
        assert proc.returncode == 0 and f"The {verb} verb".encode() in proc.stdout


def test_serve_at_a_terminal_says_what_it_waits_for(tmp_path: Path) -> None:
    # observed: typed at a terminal, `factory bus serve` printed nothing and seemed hung
    import os
    import select
    import subprocess
    import sys

    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "factory", "bus", "serve", "--data-dir", str(tmp_path / "d")],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(follower)
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)  # never hang the suite
        first = proc.stderr.readline() if ready else b""
        os.write(leader, b"\x04")  # Ctrl-D: end of input on the terminal
        proc.communicate(timeout=30)
    finally:
        os.close(leader)
    assert first.startswith(b"factory bus serve: waiting for an MCP client on stdin")
    # twin: an MCP client's pipe gets no such line (stdin closes at once, serve ends)
    piped = run_factory(["bus", "serve", "--data-dir", str(tmp_path / "e")], timeout=60)
    assert piped.returncode == 0 and b"waiting for an MCP client" not in piped.stderr

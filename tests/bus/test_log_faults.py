"""The fault table of issue 3 (SPEC B-3): every bad log is refused as corrupt, never repaired.

Each case tampers with a log that is valid (the negative control below proves it), then
checks that opening it raises CorruptLog with the named code, that a commit appends
nothing, and that the CLI exits 4.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.bus.log import LOG_NAME, EventLog
from factory.bus.model import ActorHeartbeat
from factory.errors import CorruptLog, ExitCode, FactoryError
from tests.bus.helpers import AT, bus, call, lines, rich_log, write_lines
from tests.support.cli import run_factory

Tamper = Callable[[Path], None]


def _append_raw(data: bytes) -> Tamper:
    def tamper(d: Path) -> None:
        with open(d / LOG_NAME, "ab") as f:
            f.write(data)

    return tamper


def _insert_raw(index: int, data: bytes) -> Tamper:
    def tamper(d: Path) -> None:
        raw = (d / LOG_NAME).read_bytes().splitlines(keepends=True)
        raw.insert(index, data)
        (d / LOG_NAME).write_bytes(b"".join(raw))

    return tamper


def _edit(kind: str, change: Callable[[dict], None]) -> Tamper:  # type: ignore[type-arg]
    def tamper(d: Path) -> None:
        events = lines(d)
        target = next(e for e in events if e["type"] == kind)
        change(target)
        write_lines(d, events)

    return tamper


def _duplicate(kind: str) -> Tamper:
    def tamper(d: Path) -> None:
        events = lines(d)
        events.append(next(e for e in events if e["type"] == kind))
        write_lines(d, events)

    return tamper


def _respace_first_line(d: Path) -> None:
    raw = (d / LOG_NAME).read_bytes().splitlines(keepends=True)
    raw[0] = json.dumps(json.loads(raw[0])).encode() + b"\n"
    (d / LOG_NAME).write_bytes(b"".join(raw))


FAULTS: dict[str, tuple[Tamper, str]] = {
    "torn last line": (_append_raw(b'{"at":"2026'), "torn-tail"),
    "blank line": (_insert_raw(2, b"\n"), "blank-line"),
    "invalid JSON": (_insert_raw(3, b"{not json}\n"), "bad-json"),
    "non-object line": (_insert_raw(3, b"[1,2,3]\n"), "not-an-object"),
    "missing type": (_append_raw(json.dumps({"at": AT}).encode() + b"\n"), "missing-type"),
    "unknown type": (
        _append_raw(b'{"at":"' + AT.encode() + b'","type":"message.deleted"}\n'),
        "unknown-type",
    ),
    "duplicate message id": (_duplicate("message.sent"), "duplicate-id"),
    "duplicate actor ref": (_duplicate("actor.registered"), "duplicate-id"),
    "ack by someone other than the recipient": (
        _edit("message.acked", lambda e: e.update(actorId="act-0001")),
        "ack-not-recipient",
    ),
    "ack of an unknown message": (
        _edit("message.acked", lambda e: e.update(messageId="msg-0099")),
        "ack-unknown-message",
    ),
    "handoff carrying authority": (
        _edit("work.handed-off", lambda e: e.update(authorityTransferred=["approve"])),
        "handoff-authority",
    ),
    "address that is not a minted ref (unregistered)": (
        _edit("message.sent", lambda e: e["message"].update(to="act-0042")),
        "unknown-actor",
    ),
    "address that is not a minted ref (a name)": (
        _edit("message.sent", lambda e: e["message"].update(to="builder")),
        "schema-violation",
    ),
    "id spelled twice (msg-00001)": (
        _edit("message.sent", lambda e: e["message"].update(messageId="msg-00001")),
        "id-out-of-order",
    ),
    "non-canonical line (same event, spaced)": (_respace_first_line, "not-canonical"),
    "never-grantable authority granted": (
        _edit("message.sent", lambda e: e["message"]["authority"].update(granted=["merge"])),
        "schema-violation",
    ),
    "body not labelled untrusted": (
        _edit("message.sent", lambda e: e["message"].update(trust="trusted")),
        "schema-violation",
    ),
}


def test_negative_control_untampered_log_opens_and_appends(tmp_path: Path) -> None:
    rich_log(tmp_path)
    before = (tmp_path / LOG_NAME).read_bytes()
    log = EventLog(tmp_path)
    assert log.state().events == len(before.splitlines())
    call(log, "heartbeat", actor="act-0001")
    assert (tmp_path / LOG_NAME).read_bytes().startswith(before)
    assert len((tmp_path / LOG_NAME).read_bytes()) > len(before)


@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_is_refused_as_corrupt_and_never_repaired(tmp_path: Path, name: str) -> None:
    tamper, code = FAULTS[name]
    rich_log(tmp_path)
    tamper(tmp_path)
    tampered = (tmp_path / LOG_NAME).read_bytes()
    with pytest.raises(CorruptLog) as caught:
        EventLog(tmp_path).state()
    assert caught.value.code == code
    assert caught.value.exit_code == ExitCode.FAILURE
    # A commit on the corrupt log appends nothing.
    log = bus(tmp_path)
    with pytest.raises(CorruptLog):
        log.commit(lambda state, at: (_ for _ in ()).throw(AssertionError("decided")))
    assert (tmp_path / LOG_NAME).read_bytes() == tampered


def test_cli_verify_and_serve_exit_4_on_a_corrupt_log(tmp_path: Path) -> None:
    rich_log(tmp_path)
    _append_raw(b"{torn")(tmp_path)
    tampered = (tmp_path / LOG_NAME).read_bytes()
    verify = run_factory(["bus", "verify", "--data-dir", str(tmp_path)])
    assert verify.returncode == ExitCode.FAILURE
    report = json.loads(verify.stdout)
    replays = next(c for c in report["checks"] if c["id"] == "log-replays")
    assert not replays["ok"] and replays["detail"].startswith("torn-tail")
    serve = run_factory(["bus", "serve", "--data-dir", str(tmp_path)])
    assert serve.returncode == ExitCode.FAILURE
    assert b"corrupt" not in serve.stdout and b"torn-tail" in serve.stderr
    assert (tmp_path / LOG_NAME).read_bytes() == tampered


def _inadmissible(state: object, at: str) -> tuple[ActorHeartbeat, None]:
    # A heartbeat of an actor nobody registered: a decide step that produced it has a bug.
    return ActorHeartbeat(actor_id="act-0099", at=at, status=None, type="actor.heartbeat"), None


def test_a_bug_in_the_decide_step_is_internal_and_appends_nothing(tmp_path: Path) -> None:
    # observed: an inadmissible decided event surfaced as a typed failure (exit 4)
    log = rich_log(tmp_path)
    before = (tmp_path / LOG_NAME).read_bytes()
    with pytest.raises(FactoryError) as caught:
        log.commit(_inadmissible)
    assert caught.value.exit_code == ExitCode.INTERNAL and caught.value.code == "internal"
    assert (tmp_path / LOG_NAME).read_bytes() == before


def test_an_internal_error_in_a_tool_call_goes_to_the_crash_log_in_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import factory.bus.server as server_mod

    log = rich_log(tmp_path)
    monkeypatch.setattr(server_mod, "decide", lambda state, cmd, at: _inadmissible(state, at))
    is_error, payload = server_mod.handle_call(log, "heartbeat", {"actor": "act-0001"})
    assert is_error and payload["error"] == "internal"
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) == 1 and str(logs[0]) in payload["message"]
    assert "decided event is inadmissible" in logs[0].read_text()
    # twin: a typed failure (not a bug) stays a plain tool error without a crash log
    (tmp_path / LOG_NAME).write_bytes((tmp_path / LOG_NAME).read_bytes() + b"{torn")
    again, failure = server_mod.handle_call(bus(tmp_path), "heartbeat", {"actor": "act-0001"})
    assert again and failure["error"] == "torn-tail"
    assert len(list((tmp_path / "logs").iterdir())) == 1

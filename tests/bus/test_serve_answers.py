"""``factory bus serve`` answers every request it reads, and executes none that repeats a key
(issue 24 §5). Every case runs the real server process over pipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.bus.log import LOG_NAME
from tests.bus.helpers import lines
from tests.support.bus_serve import LiveServer, serve_once


def register(ident: int, name: str) -> bytes:
    args = b'{"name":"%s","kind":"worker"}' % name.encode()
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"register",' % (ident)
        + b'"arguments":%s}}\n' % args
    )


def _params(name: str) -> bytes:
    return b'{"name":"register","arguments":{"name":"%s","kind":"worker"}}' % name.encode()


# name → (the line with a repeated key, the id its error must carry, its twin without it)
DUPLICATED: dict[str, tuple[bytes, int | None, bytes]] = {
    "method": (
        b'{"jsonrpc":"2.0","id":10,"method":"tools/call","method":"tools/call","params":%s}\n'
        % _params("dup-method"),
        10,
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":%s}\n' % _params("ok-method"),
    ),
    "method, two meanings": (
        b'{"jsonrpc":"2.0","id":12,"method":"ping","method":"tools/call","params":%s}\n'
        % _params("dup-meaning"),
        12,
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":%s}\n' % _params("ok-meaning"),
    ),
    "jsonrpc": (
        b'{"jsonrpc":"2.0","jsonrpc":"2.0","id":14,"method":"tools/call","params":%s}\n'
        % _params("dup-jsonrpc"),
        14,
        b'{"jsonrpc":"2.0","id":15,"method":"tools/call","params":%s}\n' % _params("ok-jsonrpc"),
    ),
    "id": (
        b'{"jsonrpc":"2.0","id":16,"id":16,"method":"tools/call","params":%s}\n'
        % _params("dup-id"),
        None,
        b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":%s}\n' % _params("ok-id"),
    ),
    "params": (
        b'{"jsonrpc":"2.0","id":18,"method":"tools/call","params":%s,"params":%s}\n'
        % (_params("dup-params-a"), _params("dup-params-b")),
        18,
        b'{"jsonrpc":"2.0","id":19,"method":"tools/call","params":%s}\n' % _params("ok-params"),
    ),
    "params.name": (
        b'{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"register",'
        b'"name":"register","arguments":{"name":"dup-tool","kind":"worker"}}}\n',
        20,
        register(21, "ok-tool"),
    ),
}


def test_a_key_repeated_in_the_arguments_only_is_the_calls_recorded_rejection(
    tmp_path: Path,
) -> None:
    """Inside a call's arguments a repeated key is the call's own fault: the request is one
    request, so the handler records ``command.rejected`` (issue 8 §7) and answers with a
    tool error; nothing is executed either way."""
    server = LiveServer(tmp_path)
    try:
        line = (
            b'{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"register",'
            b'"arguments":{"name":"dup-arg","name":"dup-arg-2","kind":"worker"}}}\n'
        )
        refused = server.ask(line)
        assert refused["id"] == 22 and refused["result"]["isError"] is True, refused
        assert refused["result"]["structuredContent"]["error"] == "duplicate-key"
        done = server.ask(register(23, "ok-arg"))  # twin: each key once
        assert done["result"]["isError"] is False
    finally:
        assert server.close() == 0
    events = lines(tmp_path)
    assert [(e["type"], e.get("reason")) for e in events] == [
        ("command.rejected", "duplicate-key"),
        ("actor.registered", None),
    ]
    assert events[1]["name"] == "ok-arg"


def test_a_repeated_key_is_answered_with_an_error_and_never_executed(tmp_path: Path) -> None:
    server = LiveServer(tmp_path)
    try:
        for name, (line, ident, twin) in DUPLICATED.items():
            refused = server.ask(line)
            assert refused["id"] == ident, (name, refused)
            assert refused["error"]["code"] == -32600, (name, refused)
            assert refused["error"]["data"] == "factory/refused-duplicate-key"
            done = server.ask(twin)  # negative control: the same request, each key once
            assert done["result"]["isError"] is False, (name, done)
    finally:
        assert server.close() == 0
    events = lines(tmp_path)
    assert [e["type"] for e in events] == ["actor.registered"] * len(DUPLICATED)
    assert all(e["name"].startswith("ok-") for e in events), events  # no parser chose a side


def test_a_notification_that_repeats_a_key_is_answered_for_id_null(tmp_path: Path) -> None:
    server = LiveServer(tmp_path)
    try:
        refused = server.ask(b'{"jsonrpc":"2.0","method":"x","method":"y"}\n')
        assert refused["id"] is None and refused["error"]["code"] == -32600
        assert server.ask(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n') == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {},
        }
    finally:
        assert server.close() == 0
    assert not (tmp_path / LOG_NAME).exists() or lines(tmp_path) == []


@pytest.mark.parametrize("calls", [1, 40])
def test_requests_written_then_stdin_closed_at_once_are_all_answered(
    tmp_path: Path, calls: int
) -> None:
    for attempt in range(3):  # the race was lost about half the time
        data_dir = tmp_path / str(attempt)
        payload = b"".join(register(100 + i, f"w{i}") for i in range(calls))
        answers = serve_once(data_dir, payload)
        assert sorted(a["id"] for a in answers) == list(range(100, 100 + calls))
        assert all(a["result"]["isError"] is False for a in answers)
        committed = [e["name"] for e in lines(data_dir)]
        assert committed == [f"w{i}" for i in range(calls)]  # committed ⇔ answered


def test_a_refusal_written_then_stdin_closed_is_answered_too(tmp_path: Path) -> None:
    line, ident, twin = DUPLICATED["method"]
    answers = serve_once(tmp_path, line + twin)
    assert [a["id"] for a in answers] == [ident, 11]
    assert answers[0]["error"]["code"] == -32600 and answers[1]["result"]["isError"] is False
    assert [e["name"] for e in lines(tmp_path)] == ["ok-method"]

"""The stdio wire screen (factory.bus.wire): calls whose text is not valid Unicode are
answered and recorded; every other line reaches the SDK byte for byte."""

from __future__ import annotations

import json
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest

from factory.bus.spawn import server_argv, server_env
from factory.bus.wire import MALFORMED_KEY, WireRefusal, screen_line
from tests.bus.helpers import lines


def _call(ident: int, name: str, arguments: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n'
        % (ident, name.encode(), arguments)
    )


UNCHANGED = {
    "ascii call": _call(1, "heartbeat", b'{"actor":"act-0001"}'),
    "UTF-8 text": _call(1, "send", '{"text":"caf\u00e9 \U0001f600"}'.encode()),
    "escaped surrogate pair (valid)": _call(1, "send", b'{"text":"\\ud83d\\ude00"}'),
    "escaped backslash before u": _call(1, "send", b'{"text":"\\\\ud800"}'),
    "not JSON": b"\xff\xfe garbage\n",
    "a notification, not a call": b'{"jsonrpc":"2.0","method":"x","params":{"a":"\\ud800"}}\n',
    "a call without an id": b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":"\\ud800"}}\n',
    "torn last line": b'{"jsonrpc":"2.0"',
}


@pytest.mark.parametrize("name", list(UNCHANGED))
def test_negative_control_other_lines_pass_byte_for_byte(name: str) -> None:
    assert screen_line(UNCHANGED[name]) is UNCHANGED[name]


MALFORMED = {
    "lone surrogate escape": _call(7, "register", b'{"name":"a\\ud800","kind":"worker"}'),
    "bytes that are not UTF-8": _call(7, "send", b'{"text":"\xff\xfe raw"}'),
    "lone surrogate in a key": _call(7, "heartbeat", b'{"actor":"act-0001","\\udc00":1}'),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_call_with_text_that_is_not_unicode_is_rewritten_to_a_marked_call(name: str) -> None:
    out = screen_line(MALFORMED[name])
    assert isinstance(out, bytes)
    assert out.endswith(b"\n") and out.isascii()
    request: dict[str, Any] = json.loads(out)
    assert request["id"] == 7 and request["method"] == "tools/call"
    assert request["params"]["arguments"] == {MALFORMED_KEY: True}
    assert request["params"]["name"] in ("register", "send", "heartbeat")


def test_the_live_server_answers_and_records_malformed_calls(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        server_argv(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(line: bytes) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, f"no answer to {line[:60]!r}"
        answer: dict[str, Any] = json.loads(proc.stdout.readline())
        return answer

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        req = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        assert "result" in ask(json.dumps(req).encode() + b"\n")
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        ok = ask(_call(2, "register", b'{"name":"a","kind":"worker"}'))
        assert ok["result"]["isError"] is False
        for ident, line in enumerate(MALFORMED.values(), start=3):
            line = line.replace(b'"id":7', b'"id":%d' % ident)
            answer = ask(line)
            assert answer["id"] == ident and answer["result"]["isError"] is True
            assert answer["result"]["structuredContent"]["error"] == "malformed-text"
        alive = ask(_call(9, "heartbeat", b'{"actor":"act-0001"}'))
        assert alive["result"]["isError"] is False
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    events = lines(tmp_path)
    assert [e["type"] for e in events] == [
        "actor.registered",
        *["command.rejected"] * len(MALFORMED),
        "actor.heartbeat",
    ]
    assert {e.get("reason") for e in events[1:-1]} == {"malformed-text"}
    assert not any(e["type"] == "message.sent" for e in events)  # no U+FFFD-repaired text


async def test_real_sdk_client_sees_strict_schemas_and_every_malformed_call_is_recorded(
    tmp_path: Path,
) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from factory.bus.model import VERBS
    from factory.bus.server import tool_schemas

    argv = server_argv(tmp_path / "bus")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    bad_calls: list[tuple[str, dict[str, Any], str]] = [
        ("send", {"from": "act-0001", "text": "x"}, "invalid-arguments"),  # missing field
        ("inbox", {"actor": "act-0001", "limit": "5"}, "invalid-arguments"),  # wrong type
        ("heartbeat", {"actor": "act-0001", "extra": 1}, "invalid-arguments"),  # extra field
        ("heartbeat", {"actor": "act-0001", "status": "s" * 2_000_000}, "invalid-arguments"),
        (
            "send",
            {"from": "act-0001", "to": "act-0001", "text": "\x01" * 16_384},
            "invalid-arguments",
        ),
        ("rm_rf", {"path": "/"}, "unknown-tool"),
        (
            "handoff",
            {"from": "act-0001", "to": "act-0001", "summary": "s", "authority": []},
            "handoff-carries-authority",
        ),
    ]
    with open(tmp_path / "serve.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert [t.name for t in sorted(tools, key=lambda t: t.name)] == list(VERBS)
            schemas = tool_schemas()
            for tool in tools:
                assert tool.input_schema == schemas[tool.name]
                assert tool.input_schema["additionalProperties"] is False
                assert tool.input_schema["required"]
            reg = await session.call_tool("register", {"name": "a", "kind": "worker"})
            assert not reg.is_error
            for name, args, reason in bad_calls:
                result = await session.call_tool(name, args)
                assert result.is_error and result.structured_content is not None
                assert result.structured_content["error"] == reason, (name, result)
            alive = await session.call_tool("heartbeat", {"actor": "act-0001"})
            assert not alive.is_error
    events = lines(tmp_path / "bus")
    assert [e["type"] for e in events] == [
        "actor.registered",
        *["command.rejected"] * len(bad_calls),
        "actor.heartbeat",
    ]
    assert [e["reason"] for e in events[1:-1]] == [r for _, _, r in bad_calls]


@pytest.mark.parametrize("depth", [900, 100_000])
def test_deep_nesting_with_bad_bytes_is_refused_as_too_deep(depth: int) -> None:
    nested = b"[" * depth + b'"\xff"' + b"]" * depth
    line = _call(1, "send", nested)
    out = screen_line(line)  # no RecursionError, whatever the depth
    assert isinstance(out, bytes)
    marked = json.loads(out)["params"]["arguments"]
    assert marked == {MALFORMED_KEY: "request-too-deep"}  # deeper than any verb's input


REPEATED: dict[str, tuple[bytes, int | str | None]] = {
    "method twice": (b'{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/call"}', 5),
    "jsonrpc twice": (b'{"jsonrpc":"2.0","jsonrpc":"1.0","id":"a","method":"ping"}', "a"),
    "id twice": (b'{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}', None),
    "params twice": (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{},"params":{}}', 5),
    "the tool name twice": (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","name":"b"}}',
        5,
    ),
    "a notification": (b'{"jsonrpc":"2.0","method":"x","method":"y"}', None),
    "an id that is no id": (b'{"jsonrpc":"2.0","id":true,"method":"x","method":"y"}', None),
    "a top-level array": (b'[{"jsonrpc":"2.0","id":5,"id":5}]', None),
}


@pytest.mark.parametrize("name", list(REPEATED))
def test_a_repeated_key_at_any_level_is_refused_for_the_one_id_it_names(name: str) -> None:
    line, ident = REPEATED[name]
    out = screen_line(line)
    assert out == WireRefusal(ident, "duplicate-key")
    assert out.error()["code"] == -32600
    # negative control: the same bytes with every repetition removed pass unchanged
    once = json.dumps(json.loads(line)).encode()
    assert screen_line(once) is once


def test_a_key_repeated_only_inside_a_calls_arguments_marks_the_call() -> None:
    """That call is one request with bad arguments: it reaches the handler marked, which
    records ``command.rejected`` (issue 8 §7), at any depth of the arguments."""
    for args in (b'{"k":1,"k":2}', b'{"x":[{"k":1,"k":1}]}'):
        out = screen_line(_call(5, "send", args))
        assert isinstance(out, bytes)
        call = json.loads(out)
        assert call["id"] == 5 and call["params"]["name"] == "send"
        assert call["params"]["arguments"] == {MALFORMED_KEY: "duplicate-key"}
    twin = _call(5, "send", b'{"k":1}')  # each key once: passes unchanged
    assert screen_line(twin) is twin

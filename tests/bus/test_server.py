"""The MCP surface (SPEC B-2): exactly six tools; malformed calls are rejected on the record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factory.bus.log import EventLog
from factory.bus.model import VERBS
from factory.bus.server import handle_call, tool_schemas
from factory.bus.spawn import server_argv, server_env
from tests.bus.helpers import bus, lines, rich_log
from tests.support.bus_serve import INIT

SECRET = "VALUE-THAT-MUST-NOT-BE-ECHOED"

MALFORMED: dict[str, tuple[str, Any, str, list[str]]] = {
    "missing field": ("send", {"from": "act-0001", "text": "x"}, "invalid-arguments", ["to"]),
    "wrong type": ("inbox", {"actor": "act-0001", "limit": SECRET}, "invalid-arguments", ["limit"]),
    "bool for int": ("inbox", {"actor": "act-0001", "limit": True}, "invalid-arguments", ["limit"]),
    "extra field": (
        "heartbeat",
        {"actor": "act-0001", SECRET: 1},
        "invalid-arguments",
        ["(unknown)"],
    ),
    "python name instead of alias": (
        "send",
        {"sender": "act-0001", "to": "act-0002", "text": "x"},
        "invalid-arguments",
        ["(unknown)", "from"],
    ),
    "not an object": ("register", [SECRET], "invalid-arguments", []),
    "unknown tool": ("delete_log", {"x": SECRET}, "unknown-tool", []),
    "handoff carrying authority": (
        "handoff",
        {"from": "act-0001", "to": "act-0002", "summary": "x", "authorityTransferred": ["approve"]},
        "handoff-carries-authority",
        ["authorityTransferred"],
    ),
    "address that is not a ref": (
        "heartbeat",
        {"actor": "builder"},
        "invalid-arguments",
        ["actor"],
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_call_is_a_tool_error_and_a_command_rejected_event(
    tmp_path: Path, name: str
) -> None:
    verb, args, reason, fields = MALFORMED[name]
    log = rich_log(tmp_path)
    before = len(lines(tmp_path))
    is_error, payload = handle_call(log, verb, args)
    assert is_error and payload["error"] == reason
    after = lines(tmp_path)
    assert len(after) == before + 1
    assert after[-1]["type"] == "command.rejected" and after[-1]["reason"] == reason
    assert after[-1]["fields"] == fields
    assert after[-1]["command"] == (verb if verb in VERBS else "unknown")
    assert SECRET not in json.dumps(after[-1])  # neither a value nor an unknown key
    # Negative control: a well-formed call on the same log succeeds.
    ok, result = handle_call(log, "heartbeat", {"actor": "act-0001"})
    assert not ok and result["actor"] == "act-0001"


def test_denied_authority_is_echoed_as_an_authority_denied_event(tmp_path: Path) -> None:
    log = rich_log(tmp_path)
    args = {"from": "act-0001", "to": "act-0002", "text": "x", "requestedAuthority": ["merge"]}
    is_error, result = handle_call(log, "send", args)
    assert not is_error and result["authority"]["denied"] == ["merge"]
    tail = lines(tmp_path)[-2:]
    assert [e["type"] for e in tail] == ["message.sent", "authority.denied"]
    assert tail[1]["denied"] == ["merge"] and tail[1]["messageId"] == result["messageId"]


def test_schemas_forbid_unknown_fields() -> None:
    schemas = tool_schemas()
    assert sorted(schemas) == list(VERBS)
    assert all(s.get("additionalProperties") is False for s in schemas.values())
    assert "from" in schemas["send"]["properties"] and "sender" not in schemas["send"]["properties"]


async def test_real_sdk_client_lists_exactly_six_tools_and_survives_bad_calls(
    tmp_path: Path,
) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = server_argv(tmp_path / "bus")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    with open(tmp_path / "serve.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert sorted(t.name for t in tools) == list(VERBS)
            bad = await session.call_tool("send", {"from": 7})
            assert bad.is_error and bad.structured_content["error"] == "invalid-arguments"
            unknown = await session.call_tool("rm", {})
            assert unknown.is_error
            good = await session.call_tool("register", {"name": "a", "kind": "worker"})
            assert not good.is_error and good.structured_content["ref"] == "act-0001"
    events = lines(tmp_path / "bus")
    assert [e["type"] for e in events] == [
        "command.rejected",
        "command.rejected",
        "actor.registered",
    ]
    assert EventLog(tmp_path / "bus").state().rejections == 2


def test_garbage_json_rpc_lines_do_not_crash_the_server(tmp_path: Path) -> None:
    feed = b'null\n[]\n42\n{"jsonrpc":"2.0"}\n' + json.dumps(INIT).encode() + b"\n"
    proc = subprocess.Popen(
        server_argv(tmp_path / "bus"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    out, err = proc.communicate(feed, timeout=60)
    assert proc.returncode == 0, err.decode()[-2000:]
    replies = [json.loads(x) for x in out.splitlines() if x.strip()]
    assert any(r.get("id") == 1 and "result" in r for r in replies), replies
    assert b"Traceback" not in err
    _ = bus(tmp_path / "bus")  # the data dir exists and holds no event (nothing was called)
    assert not (tmp_path / "bus" / "events.jsonl").exists()
    assert sys.executable in server_argv(tmp_path)


def test_server_env_is_an_allow_list() -> None:
    env = server_env(
        {"PATH": "/bin", "HOME": "/h", "AWS_SECRET_ACCESS_KEY": "x", "ANTHROPIC_API_KEY": "y"}
    )
    assert env == {"PATH": "/bin", "HOME": "/h", "PYTHONUNBUFFERED": "1"}

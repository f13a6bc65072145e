"""Every successful verb result conforms to the output schema its MCP tool declares
(issue 9 §5: tools declare output schemas), and an SDK client validating them accepts a
whole session."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from factory.bus.log import EventLog
from factory.bus.model import VERBS
from factory.bus.results import VERB_RESULTS, output_schemas
from factory.bus.server import handle_call

SESSION: list[tuple[str, dict[str, Any]]] = [
    ("register", {"name": "coord", "kind": "coordinator", "capabilities": ["plan"]}),
    ("register", {"name": "builder", "kind": "worker"}),
    ("register", {"name": "builder", "kind": "worker"}),  # the same ref again
    (
        "send",
        {
            "from": "act-0001",
            "to": "act-0002",
            "text": "build it",
            "expectsReply": True,
            "requestedAuthority": ["read", "merge"],
        },
    ),
    ("inbox", {"actor": "act-0002"}),
    ("ack", {"actor": "act-0002", "messageId": "msg-0001", "note": "got it"}),
    (
        "send",
        {
            "from": "act-0002",
            "to": "act-0001",
            "text": "done",
            "correlationId": "cor-0001",
            "replyTo": "act-0002",
        },
    ),
    (
        "handoff",
        {"from": "act-0001", "to": "act-0002", "summary": "take over", "correlationId": "cor-0001"},
    ),
    ("handoff", {"from": "act-0002", "to": "act-0001", "summary": "back", "replyTo": "act-0002"}),
    ("inbox", {"actor": "act-0001", "limit": 1}),
    ("heartbeat", {"actor": "act-0001", "status": "fine"}),
    ("heartbeat", {"actor": "act-0002"}),
]


def test_every_success_result_matches_its_declared_schema(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    schemas = output_schemas()
    assert sorted(schemas) == sorted(VERBS)
    seen = set()
    for verb, args in SESSION:
        is_error, payload = handle_call(log, verb, args)
        assert not is_error, (verb, payload)
        jsonschema.validate(payload, schemas[verb])  # what an MCP client checks
        VERB_RESULTS[verb].model_validate_json(json.dumps(payload), by_alias=True, by_name=False)
        seen.add(verb)
    assert seen == set(VERBS)


def test_negative_control_a_wrong_result_fails_its_schema() -> None:
    schemas = output_schemas()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ref": "act-1", "name": "x"}, schemas["register"])
    with pytest.raises(jsonschema.ValidationError):  # a handoff that transfers authority
        jsonschema.validate(
            {
                "messageId": "msg-0001",
                "correlationId": "cor-0001",
                "trust": "untrusted-text",
                "authorityTransferred": ["merge"],
                "replyTo": None,
                "notice": "n",
            },
            schemas["handoff"],
        )


async def test_an_sdk_client_lists_output_schemas_and_accepts_every_result(
    tmp_path: Path,
) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "factory", "bus", "serve", "--data-dir", str(tmp_path / "bus")],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert all(tools[v].output_schema == output_schemas()[v] for v in VERBS)
        for verb, args in SESSION:
            result = await session.call_tool(verb, args)  # the SDK validates each result
            assert not result.is_error, (verb, result)

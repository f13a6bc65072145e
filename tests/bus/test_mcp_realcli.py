"""The bus inside the agents that use it (issue 9 §5): the pinned Claude Code loads the bus
with ``--mcp-config`` (the configuration ``factory bus mcp-config`` prints) on the
rehearsal route, the scripted model calls ``register``, ``send`` and ``inbox`` as MCP
tools, and ``factory bus verify`` then shows those events.

Claude Code runs with the closed profile's own argv and env, plus only what loading an MCP
server takes: ``--mcp-config FILE`` and the bus tools on the allow-list.

Codex is not driven here (design/rehearsal.md, residuals): the pinned Codex 0.171.0 starts
the server from the ``[mcp_servers.factory]`` table but offers its tools to the model only
as a *deferred* namespace (``mcp__factory``), callable from its ``exec`` JavaScript tool,
and answers a plain function call ``mcp__factory__register`` (or ``factory__register``,
``register``) with "unsupported call" (observed); the scripted model speaks plain
function calls only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.rehearsal import open_rehearsal
from factory.rehearsal.scenario import parse_scenario
from providers import claude
from tests.rehearsal.realcli import (
    CALLER_ENVIRON,
    claude_profile,
    run_cli,
)
from tests.support.cli import run_factory

pytestmark = pytest.mark.realcli

BUS_CALLS: list[dict[str, Any]] = [
    {
        "tool": "mcp",
        "server": "factory",
        "name": "register",
        "arguments": {"name": "builder", "kind": "worker"},
    },
    {
        "tool": "mcp",
        "server": "factory",
        "name": "register",
        "arguments": {"name": "checker", "kind": "reviewer"},
    },
    {
        "tool": "mcp",
        "server": "factory",
        "name": "send",
        "arguments": {"from": "act-0001", "to": "act-0002", "text": "please review"},
    },
    {"tool": "mcp", "server": "factory", "name": "inbox", "arguments": {"actor": "act-0002"}},
]
EVENTS = ["actor.registered", "actor.registered", "message.sent", "inbox.polled"]


def scenario(role: str, final: str) -> Any:
    return parse_scenario(
        json.dumps(
            {
                "schema": "factory.rehearsal-scenario/1",
                "description": "the bus as MCP tools",
                "invocations": [{"role": role, "tool_calls": BUS_CALLS, "final_message": final}],
            }
        ).encode()
    )


def mcp_config(data_dir: Path, client: str) -> str:
    proc = run_factory(["bus", "mcp-config", "--data-dir", str(data_dir), "--client", client])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def verified_events(data_dir: Path) -> list[str]:
    proc = run_factory(["bus", "verify", "--data-dir", str(data_dir)])
    assert proc.returncode == 0, proc.stdout.decode()[-2000:]
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    lines = (data_dir / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["type"] for line in lines]


def tool_results(session: Any) -> str:
    return "\n".join(r.tool_result or "" for r in session.requests)


async def test_claude_code_loads_the_bus_and_calls_its_tools(tmp_path: Path) -> None:
    data_dir = tmp_path / "bus"
    config = tmp_path / "mcp.json"
    config.write_text(mcp_config(data_dir, "claude"))
    work = tmp_path / "work"
    work.mkdir()
    async with open_rehearsal(scenario("worker", "Registered and sent."), tmp_path / "r") as s:
        argv = claude.build_argv(claude_profile().resolve().path, "worker")
        allowed = argv.index("--allowedTools") + 1
        tools = ",".join(f"mcp__factory__{c['name']}" for c in BUS_CALLS)
        argv[allowed] = f"{argv[allowed]},{tools}"
        argv += ["--mcp-config", str(config)]
        ran = await run_cli(argv, claude.build_env(s.route, CALLER_ENVIRON), work, b"go")
        results = tool_results(s)
        s.check_consumed()
    assert ran.returncode == 0, ran.stderr.decode()[-2000:]
    final = ran.events()[-1]
    assert final["type"] == "result" and final["is_error"] is False, final
    assert final.get("permission_denials") in ([], None), final
    assert '"ref":"act-0001"' in results.replace(" ", "")  # register answered over MCP
    assert "please review" in results  # inbox showed the message sent over MCP
    assert verified_events(data_dir) == EVENTS

"""Scenario schema factory.rehearsal-scenario/1: parse, refuse, and the demo file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from factory.errors import ExitCode
from factory.rehearsal import (
    DEMO_SCENARIO,
    ScenarioInvalid,
    load_scenario,
    parse_scenario,
    scenario_digest,
)


def doc(*invocations: Mapping[str, object], **extra: object) -> bytes:
    body = {"schema": "factory.rehearsal-scenario/1", "invocations": list(invocations), **extra}
    return json.dumps(body).encode()


WORKER = {
    "role": "worker",
    "tool_calls": [{"tool": "Write", "file_path": "a", "content": ""}],
    "final_message": "done",
}
REVIEWER = {
    "role": "reviewer",
    "tool_calls": [{"tool": "shell", "command": "ls"}],
    "final_message": '{"verdict":"APPROVE","summary":"ok"}',
}


def test_demo_scenario_parses_with_every_role() -> None:
    scenario = load_scenario(DEMO_SCENARIO)
    assert [i.role for i in scenario.invocations] == ["worker", "reviewer", "repair", "reviewer"]
    assert scenario.queue(frozenset({"worker", "repair"})) == (0, 2)
    assert scenario.queue(frozenset({"reviewer"})) == (1, 3)
    assert scenario_digest(scenario).startswith("sha256:")


def test_valid_document_parses_and_counts_turns() -> None:
    scenario = parse_scenario(doc(WORKER, REVIEWER))
    assert [i.turns for i in scenario.invocations] == [2, 2]
    assert scenario.invocations[1].tool_calls[0].tool_input() == {"cmd": "ls"}


def test_digest_depends_on_content() -> None:
    one = parse_scenario(doc(WORKER))
    two = parse_scenario(doc({**WORKER, "final_message": "other"}))
    assert scenario_digest(one) == scenario_digest(parse_scenario(doc(WORKER)))
    assert scenario_digest(one) != scenario_digest(two)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{not json", "not UTF-8 JSON"),
        (b"\xff\xfe", "not UTF-8 JSON"),
        (doc(WORKER, extra_field=1), "extra_field"),
        (
            json.dumps(
                {"schema": "factory.rehearsal-scenario/2", "invocations": [WORKER]}
            ).encode(),
            "schema",
        ),
        (doc(), "invocations"),
        (doc({**WORKER, "role": "reviewer"}), "not available to role 'reviewer'"),
        (doc({**REVIEWER, "role": "repair"}), "not available to role 'repair'"),
        (doc({**WORKER, "final_message": ""}), "final_message"),
        (
            doc(
                {
                    "role": "worker",
                    "tool_calls": [{"tool": "Delete", "file_path": "x"}],
                    "final_message": "x",
                }
            ),
            "tool",
        ),
        (
            doc(
                {
                    "role": "worker",
                    "tool_calls": [{"tool": "Write", "file_path": "x", "content": 3}],
                    "final_message": "x",
                }
            ),
            "content",
        ),
    ],
)
def test_invalid_documents_are_refused_with_one_line(data: bytes, needle: str) -> None:
    with pytest.raises(ScenarioInvalid) as caught:
        parse_scenario(data)
    assert caught.value.code == "rehearsal-scenario-invalid"
    assert caught.value.exit_code == ExitCode.USAGE
    assert needle in caught.value.message
    assert "\n" not in caught.value.message


def test_oversized_scenario_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(doc({**WORKER, "final_message": "x" * (1 << 20)}))
    with pytest.raises(ScenarioInvalid, match="limit"):
        load_scenario(big)


def test_missing_scenario_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioInvalid, match="cannot read scenario"):
        load_scenario(tmp_path / "absent.json")
    (tmp_path / "present.json").write_bytes(doc(WORKER))
    assert load_scenario(tmp_path / "present.json").invocations[0].role == "worker"


def test_a_folder_or_fifo_named_as_the_scenario_is_refused_by_name(tmp_path: Path) -> None:
    import os

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for name in ("folder", "fifo"):
        with pytest.raises(ScenarioInvalid, match="not a regular file"):
            load_scenario(tmp_path / name)
    (tmp_path / "folder" / "s.json").write_bytes(doc(WORKER))  # twin: a file inside it loads
    assert load_scenario(tmp_path / "folder" / "s.json").invocations[0].role == "worker"


def test_an_mcp_tool_call_is_served_under_the_cli_s_name_for_either_role() -> None:
    from factory.rehearsal.scenario import McpCall, parse_scenario

    call = {"tool": "mcp", "server": "factory", "name": "register", "arguments": {"name": "a"}}
    for role in ("worker", "reviewer"):
        doc = {
            "schema": "factory.rehearsal-scenario/1",
            "invocations": [{"role": role, "tool_calls": [call], "final_message": "done"}],
        }
        parsed = parse_scenario(json.dumps(doc).encode()).invocations[0].tool_calls[0]
        assert isinstance(parsed, McpCall)
        assert parsed.wire_name() == "mcp__factory__register"
        assert parsed.tool_input() == {"name": "a"}


@pytest.mark.parametrize("server", ["", "a b", "x" * 65, "a/b"])
def test_an_mcp_call_with_a_bad_server_name_is_refused(server: str) -> None:
    from factory.rehearsal.scenario import ScenarioInvalid, parse_scenario

    call = {"tool": "mcp", "server": server, "name": "register"}
    doc = {
        "schema": "factory.rehearsal-scenario/1",
        "invocations": [{"role": "worker", "tool_calls": [call], "final_message": "done"}],
    }
    with pytest.raises(ScenarioInvalid):
        parse_scenario(json.dumps(doc).encode())

"""``factory bus mcp-config``, ``bus serve`` at a terminal, and the server's self-description
(issue 9 §5): a ready client configuration with absolute paths, Ctrl-C that stops promptly
without touching the log, the real version, and ``--help`` for every flag."""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from factory import __version__
from factory.bus.mcp_config import render
from factory.bus.model import VERB_INPUTS
from factory.cli.bus_cmd import FLAG_HELP, REQUIRED, VERB_FLAGS
from tests.support.cli import run_factory
from tests.support.tmux import Terminal


def test_claude_config_names_absolute_paths_for_a_relative_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    proc = run_factory(["bus", "mcp-config", "--data-dir", "bus"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    server = json.loads(proc.stdout)["mcpServers"]["factory"]
    assert server["type"] == "stdio" and server["env"] == {}
    assert os.path.isabs(server["command"])
    assert server["args"][-4:] == ["bus", "serve", "--data-dir", str(tmp_path / "bus")]
    entry = run_factory(["bus", "mcp-config", "--data-dir", "bus", "--entry"], cwd=tmp_path)
    assert json.loads(entry.stdout) == server
    assert not (tmp_path / "bus").exists()  # printing a configuration creates nothing


def test_codex_config_is_a_toml_table_with_absolute_paths(tmp_path: Path) -> None:
    odd = tmp_path / 'dir "quoted" \\ ü'
    text = render("codex", odd, program=["/opt/f actory/bin/factory"])
    table = tomllib.loads(text)["mcp_servers"]["factory"]
    assert table == {
        "command": "/opt/f actory/bin/factory",
        "args": ["bus", "serve", "--data-dir", str(odd)],
    }
    module = render("codex", odd, program=[sys.executable, "-m", "factory"])
    assert tomllib.loads(module)["mcp_servers"]["factory"]["args"][:2] == ["-m", "factory"]


def test_entry_is_refused_for_codex() -> None:
    proc = run_factory(["bus", "mcp-config", "--data-dir", "d", "--client", "codex", "--entry"])
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"factory: entry-needs-claude:" in proc.stderr


async def test_the_printed_config_starts_one_shared_bus_from_any_folder(tmp_path: Path) -> None:
    """An MCP client started in two different folders, each with the printed config, talks
    to the same bus (the relative --data-dir problem the command exists for)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    proc = run_factory(["bus", "mcp-config", "--data-dir", "shared"], cwd=tmp_path)
    server = json.loads(proc.stdout)["mcpServers"]["factory"]
    refs = []
    for name, folder in (("alpha", tmp_path / "a"), ("beta", tmp_path / "b")):
        folder.mkdir()
        params = StdioServerParameters(
            command=server["command"], args=server["args"], cwd=folder, env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "factory-bus"
            assert init.server_info.version == __version__  # the real version
            result = await session.call_tool("register", {"name": name, "kind": "worker"})
            assert not result.is_error
            assert isinstance(result.structured_content, dict)
            refs.append(result.structured_content["ref"])
    assert refs == ["act-0001", "act-0002"]  # one bus: the second session saw the first
    lines = (tmp_path / "shared" / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["actor.registered"] * 2
    assert not (tmp_path / "a" / "shared").exists() and not (tmp_path / "b" / "shared").exists()


@pytest.mark.parametrize("cols", [80, 120])
def test_serve_at_a_terminal_stops_on_ctrl_c_and_leaves_the_log_alone(
    tmp_path: Path, cols: int
) -> None:
    data = tmp_path / "bus"
    assert (
        run_factory(
            ["bus", "register", "--data-dir", str(data), "--name", "a", "--kind", "w"]
        ).returncode
        == 0
    )
    before = (data / "events.jsonl").read_bytes()
    env = {"HOME": str(tmp_path)}
    with Terminal(tmp_path, cols=cols, rows=30, env=env) as term:
        term.type(
            f'{sys.executable} -m factory bus serve --data-dir {data}; echo "serve""-exit=$?"'
        )
        term.wait_for("Ctrl-C or Ctrl-D stops it", timeout=60, whole=True)
        started = time.monotonic()
        term.key("C-c")
        shown = term.wait_for("serve-exit=", timeout=30, whole=True)
        elapsed = time.monotonic() - started
    assert "serve-exit=130" in shown, shown
    assert "stopped (Ctrl-C); nothing was written to the log" in shown
    assert "Traceback" not in shown
    assert elapsed < 10, elapsed  # promptly (generous: the machine is shared)
    assert (data / "events.jsonl").read_bytes() == before


def test_without_a_terminal_eof_still_stops_the_server_quietly(tmp_path: Path) -> None:
    proc = run_factory(["bus", "serve", "--data-dir", str(tmp_path / "bus")], input=b"")
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert b"Ctrl-C" not in proc.stderr  # the terminal hint is for people only


def _schema(verb: str) -> dict[str, Any]:
    return VERB_INPUTS[verb].model_json_schema(by_alias=True)


@pytest.mark.parametrize("verb", sorted(VERB_FLAGS))
def test_every_verb_flag_has_the_schema_s_own_help(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _schema(verb)
    assert set(REQUIRED[verb]) == set(schema.get("required", []))
    for _flag, key, _kind in VERB_FLAGS[verb]:
        assert FLAG_HELP[(verb, key)] == schema["properties"][key]["description"]
    from factory.cli.main import main

    with pytest.raises(SystemExit):
        main(["bus", verb, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag, key, _kind in VERB_FLAGS[verb]:
        assert flag in out
        assert " ".join(FLAG_HELP[(verb, key)].split()) in out
    assert {key for _f, key, _k in VERB_FLAGS[verb]} == set(schema["properties"])


def test_a_hostile_data_dir_is_escaped_in_the_printed_configuration(tmp_path: Path) -> None:
    """Issue 24 §3: a bidi or invisible character in the data dir's path parses to the same
    path but never reaches the terminal raw (twin: an ordinary non-ASCII name stays as it
    is)."""
    import json as _json

    from factory.bus.mcp_config import render

    odd = tmp_path / "da\u202eta\u200b"
    text = render("claude", odd)
    assert "\u202e" not in text and "\\u202e" in text and "\\u200b" in text
    server = _json.loads(text)["mcpServers"]["factory"]
    assert str(odd) in server["args"]
    plain = render("claude", tmp_path / "données")
    assert "données" in plain

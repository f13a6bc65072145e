"""``factory bus mcp-config --install`` (issue 28): the client's own configuration file,
edited so that a second run changes nothing and everything else in it is kept.

Real files under an isolated HOME (``tmp_path``); the CLI runs as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from factory.bus.mcp_edit import install_json, install_toml
from tests.support.cli import run_factory

OTHER_TOML = (
    "# my settings\n"
    'model = "o3"  # the one I pay for\n'
    "\n"
    "[mcp_servers.other]   # someone else's server\n"
    'command = "/opt/other"\n'
    "args = [ 'x',  \"y\" ]\n"
)
OTHER_JSON: dict[str, Any] = {
    "numStartups": 3,
    "mcpServers": {"other": {"type": "stdio", "command": "/opt/other", "args": [], "env": {}}},
    "projects": {"/w": {"allowedTools": []}},
}


def home_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")}
    env["HOME"] = str(home)
    return env


def install(home: Path, client: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    data_dir = str(home / "bus")
    args = ["bus", "mcp-config", "--data-dir", data_dir, "--client", client, "--install"]
    return run_factory([*args, *extra], env=home_env(home))


def config_file(home: Path, client: str) -> Path:
    return home / ".codex" / "config.toml" if client == "codex" else home / ".claude.json"


def factory_server(path: Path, client: str) -> dict[str, Any]:
    if client == "codex":
        value: dict[str, Any] = tomllib.loads(path.read_text())["mcp_servers"]["factory"]
    else:
        value = json.loads(path.read_text())["mcpServers"]["factory"]
    return value


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_a_second_install_changes_nothing(tmp_path: Path, client: str) -> None:
    first = install(tmp_path, client)
    assert first.returncode == 0 and first.stdout == b"", first.stderr
    path = config_file(tmp_path, client)
    assert f"created: {path}".encode() in first.stderr
    assert first.stderr.count(b"\n") == 1  # one line
    before, stat_before = path.read_bytes(), path.stat()
    second = install(tmp_path, client)
    assert second.returncode == 0, second.stderr
    assert (
        second.stderr
        == f"factory bus mcp-config: already installed; nothing changed: {path}\n".encode()
    )
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat_before.st_mtime_ns  # not even rewritten
    server = factory_server(path, client)
    assert server["args"][-4:] == ["bus", "serve", "--data-dir", str(tmp_path / "bus")]
    assert path.stat().st_mode & 0o777 == 0o600


def test_codex_keeps_another_server_and_the_comments_byte_for_byte(tmp_path: Path) -> None:
    path = config_file(tmp_path, "codex")
    path.parent.mkdir()
    path.write_text(OTHER_TOML)
    assert install(tmp_path, "codex").returncode == 0
    after = path.read_text()
    assert after.startswith(OTHER_TOML + "\n[mcp_servers.factory]\n")  # appended, nothing else
    parsed = tomllib.loads(after)
    assert parsed["mcp_servers"]["other"] == {"command": "/opt/other", "args": ["x", "y"]}
    assert set(parsed["mcp_servers"]) == {"other", "factory"}


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_a_file_without_a_final_newline(tmp_path: Path, client: str) -> None:
    path = config_file(tmp_path, client)
    path.parent.mkdir(exist_ok=True)
    text = 'model = "o3"' if client == "codex" else json.dumps(OTHER_JSON, indent=2)
    path.write_text(text)  # no final newline (Claude Code writes its file so)
    assert install(tmp_path, client).returncode == 0
    after = path.read_text()
    if client == "codex":
        assert after.startswith(text + "\n\n[mcp_servers.factory]\n")
        assert tomllib.loads(after)["model"] == "o3"
    else:
        expected = dict(OTHER_JSON)
        expected["mcpServers"] = {
            **OTHER_JSON["mcpServers"],
            "factory": factory_server(path, client),
        }
        assert after == json.dumps(expected, indent=2)  # same style, still no final newline
        assert list(json.loads(after)) == list(OTHER_JSON)  # key order kept


def test_claude_keeps_the_other_keys_and_servers_in_their_order(tmp_path: Path) -> None:
    path = config_file(tmp_path, "claude")
    path.write_text(json.dumps(OTHER_JSON, indent=2) + "\n")
    assert install(tmp_path, "claude").returncode == 0
    after = json.loads(path.read_text())
    assert path.read_text().endswith("}\n")
    assert list(after) == list(OTHER_JSON)
    assert list(after["mcpServers"]) == ["other", "factory"]
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in OTHER_JSON.items() if k != "mcpServers"
    }
    assert after["mcpServers"]["other"] == OTHER_JSON["mcpServers"]["other"]


BAD = {
    ("codex", "not TOML"): "model = [\n",
    ("codex", "the table twice, as >> twice left it"): (
        '[mcp_servers.factory]\ncommand = "a"\n\n[mcp_servers.factory]\ncommand = "a"\n'
    ),
    ("codex", "a server list that is not a table"): 'mcp_servers = "none"\n',
    ("codex", "an array of factory tables"): '[[mcp_servers.factory]]\ncommand = "a"\n',
    ("claude", "not JSON"): '{"mcpServers": {',
    ("claude", "a repeated key"): '{"mcpServers": {}, "mcpServers": {}}',
    ("claude", "not an object"): "[]",
    ("claude", "servers not an object"): '{"mcpServers": []}',
    ("claude", "NaN"): '{"n": NaN}',
}
GOOD = {
    "codex": '[mcp_servers.factory]\ncommand = "a"\n\n[mcp_servers.other]\ncommand = "a"\n',
    "claude": '{"mcpServers": {}, "other": {}}',
}


@pytest.mark.parametrize(("client", "why"), sorted(BAD))
def test_a_file_that_does_not_parse_is_refused_and_untouched(
    tmp_path: Path, client: str, why: str
) -> None:
    path = config_file(tmp_path, client)
    path.parent.mkdir(exist_ok=True)
    path.write_text(BAD[(client, why)])
    os.chmod(path, 0o640)
    before = path.stat()
    proc = install(tmp_path, client)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(b"factory: client-config-invalid: " + str(path).encode())
    assert path.read_text() == BAD[(client, why)]
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in path.parent.iterdir() if p.name != "bus") == [path.name]


def test_a_file_that_is_not_utf8_is_refused_and_untouched(tmp_path: Path) -> None:
    path = config_file(tmp_path, "codex")
    path.parent.mkdir()
    path.write_bytes(b'model = "\xff"\n')
    proc = install(tmp_path, "codex")
    assert proc.returncode == 2 and b"client-config-invalid:" in proc.stderr
    assert b"is not UTF-8" in proc.stderr
    assert path.read_bytes() == b'model = "\xff"\n'


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_twin_a_valid_file_is_edited_and_keeps_its_mode(tmp_path: Path, client: str) -> None:
    path = config_file(tmp_path, client)
    path.parent.mkdir(exist_ok=True)
    path.write_text(GOOD[client])
    os.chmod(path, 0o640)
    proc = install(tmp_path, client)
    assert proc.returncode == 0, proc.stderr
    assert f"updated: {path}".encode() in proc.stderr
    assert factory_server(path, client)["args"][-1] == str(tmp_path / "bus")
    assert path.stat().st_mode & 0o777 == 0o640


def test_an_entry_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".claude.json").mkdir()
    proc = install(tmp_path, "claude")
    assert proc.returncode == 2
    assert b"factory: client-config-unusable:" in proc.stderr
    assert b"is not a regular file" in proc.stderr
    assert list((tmp_path / ".claude.json").iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away takes root")
def test_another_user_s_file_is_refused(tmp_path: Path) -> None:
    """``sudo`` keeping HOME: the rename would make the user's file root's (0600), and
    their own Codex could no longer read it. The twin: every test above edits a file of
    this user."""
    path = config_file(tmp_path, "claude")
    path.write_text("{}")
    os.chown(path, 65534, 65534)
    proc = install(tmp_path, "claude")
    assert proc.returncode == 2
    assert b"client-config-unusable:" in proc.stderr and b"another user" in proc.stderr
    assert path.read_text() == "{}" and path.stat().st_uid == 65534


def test_codex_home_is_honoured_and_one_missing_level_made(tmp_path: Path) -> None:
    """Codex reads ``$CODEX_HOME/config.toml``; a missing ``CODEX_HOME`` folder is made
    (0700), but not a whole missing chain (the twin: refused, nothing made)."""
    env = home_env(tmp_path)
    args = ["bus", "mcp-config", "--data-dir", "d", "--client", "codex", "--install"]
    deep = tmp_path / "missing" / "codex"
    refused = run_factory(args, env={**env, "CODEX_HOME": str(deep)}, cwd=tmp_path)
    assert refused.returncode == 2 and b"client-config-unusable" in refused.stderr
    assert not (tmp_path / "missing").exists()
    made = run_factory(args, env={**env, "CODEX_HOME": str(tmp_path / "ch")}, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "ch").stat().st_mode & 0o777 == 0o700
    assert factory_server(tmp_path / "ch" / "config.toml", "codex")["args"][-1] == str(
        tmp_path / "d"
    )
    assert not (tmp_path / ".codex").exists()


def test_a_symlinked_file_is_edited_through_its_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text("{}")
    (tmp_path / ".claude.json").symlink_to(real)
    proc = install(tmp_path, "claude")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".claude.json").is_symlink()
    assert f"(-> {real})".encode() in proc.stderr
    assert "factory" in json.loads(real.read_text())["mcpServers"]


def test_entry_and_install_together_are_a_usage_error(tmp_path: Path) -> None:
    proc = install(tmp_path, "claude", "--entry")
    assert proc.returncode == 2 and b"not allowed with argument" in proc.stderr
    assert not (tmp_path / ".claude.json").exists()


# --- the edit itself (pure) ------------------------------------------------------------

OWNED = {"command": "/new/factory", "args": ["bus", "serve", "--data-dir", "/new"]}


def test_a_changed_server_is_edited_in_place_keeping_its_comments_and_keys() -> None:
    text = (
        "[mcp_servers.factory]  # ours\n"
        'command = "/old/factory"  # moved\n'
        'args = ["bus", "serve", "--data-dir", "/old"]\n'
        "startup_timeout_sec = 20\n"
        "\n"
        "[profiles.x]\n"
        'model = "y"'
    )
    after = install_toml(text, OWNED, "config.toml")
    assert after == (
        "[mcp_servers.factory]  # ours\n"
        'command = "/new/factory"  # moved\n'
        'args = ["bus", "serve", "--data-dir", "/new"]\n'
        "startup_timeout_sec = 20\n"
        "\n"
        "[profiles.x]\n"
        'model = "y"'
    )
    assert install_toml(after, OWNED, "config.toml") is after  # installed: unchanged


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { other = { command = "o" } }\n',
        'mcp_servers.other.command = "o"\n',
        '[mcp_servers.other]\ncommand = "o"\n\n[profile]\nx = 1\n\n'
        '[mcp_servers.more]\ncommand = "m"\n',
        "",
        "\n",
    ],
)
def test_other_layouts_of_the_server_list_get_the_server_once(text: str) -> None:
    after = install_toml(text, OWNED, "config.toml")
    parsed = tomllib.loads(after)
    assert parsed["mcp_servers"]["factory"] == OWNED
    assert {k for k in parsed["mcp_servers"] if k != "factory"} == set(
        tomllib.loads(text).get("mcp_servers", {})
    )
    assert install_toml(after, OWNED, "config.toml") == after


def test_claude_keeps_the_keys_a_user_added_to_the_entry() -> None:
    text = json.dumps({"mcpServers": {"factory": {"command": "/old", "env": {"A": "1"}}}})
    after = json.loads(install_json(text, {"type": "stdio", **OWNED}, {"env": {}}, "c.json"))
    assert after["mcpServers"]["factory"] == {
        "command": "/new/factory",
        "env": {"A": "1"},
        "type": "stdio",
        "args": OWNED["args"],
    }

"""``factory bus mcp-config --install`` read back by the pinned real CLIs (issue 28): after
two installs ``codex mcp list`` and ``claude mcp list`` list the factory server once, next
to a server the CLI itself added, and exit 0. Offline: neither lists over the network.

The negative control: the old way (the printed table appended with ``>>`` twice) makes the
same ``codex mcp list`` fail with "duplicate key", so the check can see the break."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_factory

pytestmark = pytest.mark.realcli

BIN = Path(__file__).resolve().parents[2] / "node_modules" / ".bin"


def cli(name: str, args: list[str], home: Path) -> subprocess.CompletedProcess[bytes]:
    if not (BIN / name).exists():
        pytest.skip(f"the pinned {name} is not installed (./scripts/setup)")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
    }
    return subprocess.run(
        [str(BIN / name), *args], env=env, cwd=home, capture_output=True, timeout=120, check=False
    )


def factory_config(home: Path, client: str, *how: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")}
    env["HOME"] = str(home)
    args = ["bus", "mcp-config", "--data-dir", str(home / "bus"), "--client", client, *how]
    return run_factory(args, env=env, cwd=home)


def test_codex_lists_the_factory_server_once_after_two_installs(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    added = cli("codex", ["mcp", "add", "other", "--", "/bin/true"], tmp_path)
    assert added.returncode == 0, added.stderr
    for _ in range(2):
        proc = factory_config(tmp_path, "codex", "--install")
        assert proc.returncode == 0, proc.stderr
    listed = cli("codex", ["mcp", "list", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    servers = json.loads(listed.stdout)
    assert sorted(s["name"] for s in servers) == ["factory", "other"]
    (factory,) = (s for s in servers if s["name"] == "factory")
    assert factory["transport"]["args"][-1] == str(tmp_path / "bus")


def test_negative_control_appending_twice_breaks_codex(tmp_path: Path) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    for _ in range(2):
        with config.open("ab") as out:
            out.write(factory_config(tmp_path, "codex").stdout)
    listed = cli("codex", ["mcp", "list", "--json"], tmp_path)
    assert listed.returncode != 0
    assert b"duplicate key" in listed.stderr


def test_claude_lists_and_starts_the_factory_server_once_after_two_installs(
    tmp_path: Path,
) -> None:
    added = cli("claude", ["mcp", "add", "--scope", "user", "other", "--", "/bin/true"], tmp_path)
    assert added.returncode == 0, added.stderr
    written = (tmp_path / ".claude.json").read_text()
    # Claude Code's own file survives the JSON round trip byte for byte.
    assert json.dumps(json.loads(written), indent=2, ensure_ascii=False) == written
    for _ in range(2):
        proc = factory_config(tmp_path, "claude", "--install")
        assert proc.returncode == 0, proc.stderr
    listed = cli("claude", ["mcp", "list"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.decode().splitlines()
    ours = [line for line in lines if line.startswith("factory: ")]
    assert len(ours) == 1 and len([x for x in lines if x.startswith("other: ")]) == 1, lines
    assert str(tmp_path / "bus") in ours[0]
    assert "Connected" in ours[0], lines  # Claude Code started the bus from the entry

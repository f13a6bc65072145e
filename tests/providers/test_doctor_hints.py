"""``factory doctor`` tells a new user why a login or a version does not count (issue 4)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from providers import Effects
from providers.doctor import check_claude
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes

FAKE = r"""#!{py}
import json, sys
args = sys.argv[1:]
if args == ["--version"]:
    print({version!r}); sys.exit(0)
if args == ["auth", "status"]:
    print(json.dumps({{"loggedIn": {logged_in}, "authMethod": "none"}})); sys.exit(0)
sys.exit(2)
"""


def _fake_claude(folder: Path, version: str, logged_in: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "claude"
    exe.write_text(FAKE.format(py=sys.executable, version=version, logged_in=logged_in))
    exe.chmod(0o755)
    return folder


async def test_a_version_other_than_the_pin_is_a_problem(tmp_path: Path) -> None:
    bin_dir = _fake_claude(tmp_path / "bin", "2.1.400 (Claude Code)", True)
    entry = await check_claude(Effects(environ={"PATH": str(bin_dir)}, fallback_dirs=()), "2.1.332")
    assert entry.matches_pin is False
    assert any("not the pinned 2.1.332" in p for p in entry.problems)


async def test_the_pinned_version_twin_has_no_problem(tmp_path: Path) -> None:
    bin_dir = _fake_claude(tmp_path / "bin", "2.1.332 (Claude Code)", True)
    entry = await check_claude(Effects(environ={"PATH": str(bin_dir)}, fallback_dirs=()), "2.1.332")
    assert entry.matches_pin is True and entry.problems == []
    assert entry.ignored_env == []


async def test_login_problem_names_ignored_caller_variables(tmp_path: Path) -> None:
    bin_dir = _fake_claude(tmp_path / "bin", "2.1.332 (Claude Code)", False)
    environ = {
        "PATH": str(bin_dir),
        "ANTHROPIC_API_KEY": "sk-secret-value",
        "CLAUDE_CONFIG_DIR": "/elsewhere",
        "HTTPS_PROXY": "http://proxy:3128",
    }
    entry = await check_claude(Effects(environ=environ, fallback_dirs=()), "2.1.332")
    assert entry.ignored_env == ["ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "HTTPS_PROXY"]
    assert "ANTHROPIC_API_KEY, CLAUDE_CONFIG_DIR, HTTPS_PROXY" in entry.problems[0]
    assert "sk-secret-value" not in entry.canonical().decode()  # names only, never values


def test_doctor_cli_reports_ignored_codex_home(fakes: Fakes, tmp_path: Path) -> None:
    fakes.mode(codex="not-logged-in")
    env = {**os.environ, "CODEX_HOME": str(tmp_path), "CODEX_API_KEY": "k"}
    proc = run_factory(["doctor"], env=env, timeout=60)
    codex = json.loads(proc.stdout)["profiles"]["codex"]
    assert codex["ignored_env"] == ["CODEX_HOME", "CODEX_API_KEY"]
    assert "never passed to the CLI" in codex["problems"][0]
    assert "CODEX_HOME" in proc.stderr.decode()


def test_doctor_help_documents_the_json_shape() -> None:
    proc = run_factory(["doctor", "--help"], timeout=30)
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "factory.doctor/1" in out and "ignored_env" in out


def test_no_sentinel_reaches_any_doctor_probe(fakes: Fakes) -> None:
    # P-3 for doctor's own children too: version, login and sandbox probes.
    from tests.support.sentinels import FAMILIES, SENTINEL

    env = {**os.environ, **{name: f"{SENTINEL}-{name}" for name in FAMILIES}}
    proc = run_factory(["doctor"], env=env, timeout=60)
    assert proc.returncode == 0
    records = fakes.records()
    assert {str(r["kind"]) for r in records} >= {"version", "auth", "login", "sandbox"}
    for rec in records:
        assert isinstance(rec["env"], dict)
        leaked = sorted(k for k, v in rec["env"].items() if SENTINEL in str(v))
        assert leaked == [], f"{rec['name']} {rec['kind']} received {leaked}"
    assert SENTINEL not in proc.stdout.decode()  # names may appear, values never

"""SPEC P-3: caller variables that carry keys, tokens, endpoints, cloud routing, custom
headers, git redirection or parent-agent markers never reach any child of any profile
or route. Every family is planted with a sentinel; each fake records its env from inside
every process the profile starts (version probe, login probe, the run itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.provider_api import RehearsalRoute, Route, SubscriptionRoute
from providers import ClaudeProfile, CodexProfile, Effects
from tests.support.fake_cli import Fakes
from tests.support.sentinels import FAMILIES, SENTINEL


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, worktree: Path, fakes: Fakes) -> None:
    # Planted after the worktree and fakes exist (git itself would obey GIT_* sentinels).
    for name in FAMILIES:
        monkeypatch.setenv(name, f"{SENTINEL}-{name}")


def _assert_clean(fakes: Fakes, expected_kinds: set[str]) -> None:
    records = fakes.records()
    assert {str(r["kind"]) for r in records} >= expected_kinds
    for rec in records:
        env = rec["env"]
        assert isinstance(env, dict)
        leaked = sorted(k for k, v in env.items() if SENTINEL in str(v) or SENTINEL in k)
        assert leaked == [], f"{rec['name']} {rec['kind']} received {leaked}"


def _rehearsal(tmp_path: Path) -> RehearsalRoute:
    return RehearsalRoute(
        base_url="http://127.0.0.1:4010", api_key="throwaway-1", config_root=tmp_path / "route"
    )


@pytest.mark.usefixtures("planted")
@pytest.mark.parametrize("route_name", ["subscription", "rehearsal"])
async def test_no_sentinel_reaches_claude(
    fakes: Fakes, effects: Effects, worktree: Path, tmp_path: Path, route_name: str
) -> None:
    route: Route = SubscriptionRoute() if route_name == "subscription" else _rehearsal(tmp_path)
    for role in ("worker", "repair"):
        await ClaudeProfile(effects).run_agent(
            role=role,
            worktree=worktree,
            prompt="x",
            timeout_ms=10_000,
            route=route,
        )
    kinds = {"version", "run"} | ({"auth"} if route_name == "subscription" else set())
    _assert_clean(fakes, kinds)


@pytest.mark.usefixtures("planted")
@pytest.mark.parametrize("route_name", ["subscription", "rehearsal"])
async def test_no_sentinel_reaches_codex(
    fakes: Fakes, effects: Effects, worktree: Path, tmp_path: Path, scratch: Path, route_name: str
) -> None:
    route: Route = SubscriptionRoute() if route_name == "subscription" else _rehearsal(tmp_path)
    await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="x", scratch=scratch, timeout_ms=10_000, route=route
    )
    kinds = {"version", "run"} | ({"login"} if route_name == "subscription" else set())
    _assert_clean(fakes, kinds)


@pytest.mark.usefixtures("planted")
async def test_rehearsal_values_come_only_from_the_route(
    fakes: Fakes, effects: Effects, worktree: Path, tmp_path: Path, scratch: Path
) -> None:
    # Positive twin: the route's own endpoint, key and config homes do arrive.
    route = _rehearsal(tmp_path)
    await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=route
    )
    await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="x", scratch=scratch, timeout_ms=10_000, route=route
    )
    claude_env = next(r for r in fakes.records("run") if r["name"] == "claude")["env"]
    codex = next(r for r in fakes.records("run") if r["name"] == "codex")
    assert isinstance(claude_env, dict) and isinstance(codex["env"], dict)
    assert claude_env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4010"
    assert claude_env["ANTHROPIC_API_KEY"] == "throwaway-1"
    assert claude_env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "route" / "claude")
    assert claude_env["HOME"] == str(tmp_path / "route" / "home")
    assert codex["env"]["CODEX_HOME"] == str(tmp_path / "route" / "codex")
    assert codex["env"]["FACTORY_REHEARSAL_API_KEY"] == "throwaway-1"
    argv = codex["argv"]
    assert isinstance(argv, list)
    assert 'model_providers.factory_rehearsal.base_url="http://127.0.0.1:4010/v1"' in argv
    assert "--dangerously-bypass-approvals-and-sandbox" not in argv
    _assert_clean(fakes, {"version", "run"})


async def test_subscription_passes_only_the_allow_list(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=SubscriptionRoute()
    )
    env = fakes.records("run")[0]["env"]
    assert isinstance(env, dict)
    allowed = {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "DISABLE_AUTOUPDATER",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "CLAUDE_CODE_MAX_RETRIES",
    }
    assert set(env) <= allowed
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "3" and "PATH" in env and "HOME" in env


@pytest.mark.usefixtures("planted")
async def test_sentinel_check_catches_a_leaking_runner(fakes: Fakes, worktree: Path) -> None:
    # Negative control: a runner that inherits the caller's env is caught by the check.
    import dataclasses
    import os

    from factory.proc import RunResult, RunSpec, run

    async def leaky(spec: RunSpec) -> RunResult:
        return await run(dataclasses.replace(spec, env={**os.environ, **spec.env}))

    await ClaudeProfile(Effects(runner=leaky, fallback_dirs=(), grace_s=0.4)).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=SubscriptionRoute()
    )
    with pytest.raises(AssertionError, match="received"):
        _assert_clean(fakes, {"run"})


@pytest.mark.usefixtures("planted")
async def test_the_api_route_passes_only_the_named_keys(
    fakes: Fakes, effects: Effects, worktree: Path, tmp_path: Path, scratch: Path
) -> None:
    """The api route: each CLI gets exactly its own key from the route object (the source
    the user named), a private config home, and none of the caller's planted sentinels —
    the caller's own ANTHROPIC_API_KEY and CODEX_API_KEY included."""
    from factory.provider_api import ApiRoute

    route = ApiRoute("named-anthropic-key-1", "named-codex-key-1", tmp_path / "api", "file")
    assert "named" not in repr(route)  # the keys are never shown
    await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=route
    )
    await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="x", scratch=scratch, timeout_ms=10_000, route=route
    )
    claude_env = next(r for r in fakes.records("run") if r["name"] == "claude")["env"]
    codex_env = next(r for r in fakes.records("run") if r["name"] == "codex")["env"]
    assert isinstance(claude_env, dict) and isinstance(codex_env, dict)
    assert claude_env["ANTHROPIC_API_KEY"] == "named-anthropic-key-1"
    assert claude_env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "api" / "claude")
    assert claude_env["HOME"] == str(tmp_path / "api" / "home")
    assert "named-codex-key-1" not in claude_env.values()
    assert codex_env["CODEX_API_KEY"] == "named-codex-key-1"
    assert codex_env["CODEX_HOME"] == str(tmp_path / "api" / "codex")
    assert "named-anthropic-key-1" not in codex_env.values()
    _assert_clean(fakes, {"version", "run"})

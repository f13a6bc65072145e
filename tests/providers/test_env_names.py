"""Each profile reports the names of the environment its CLI got (issue 8 §6:
``child_env_names``): exactly the names the fake CLI saw, sorted, never a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.provider_api import ProviderResult, RehearsalRoute, Route, SubscriptionRoute
from providers import ClaudeProfile, CodexProfile, Effects
from tests.support.fake_cli import Fakes


def _seen(fakes: Fakes, name: str) -> list[str]:
    env = next(r for r in fakes.records("run") if r["name"] == name)["env"]
    assert isinstance(env, dict)
    return sorted(env)


@pytest.mark.parametrize("route_name", ["subscription", "rehearsal"])
async def test_both_profiles_report_the_names_their_cli_received(
    fakes: Fakes,
    effects: Effects,
    worktree: Path,
    scratch: Path,
    rehearsal: RehearsalRoute,
    route_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SECRET_TOKEN_VALUE", "never-a-name")
    route: Route = SubscriptionRoute() if route_name == "subscription" else rehearsal
    claude = await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=route
    )
    codex = await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="x", scratch=scratch, timeout_ms=10_000, route=route
    )
    for result, name in ((claude, "claude"), (codex, "codex")):
        assert isinstance(result, ProviderResult) and result.env_names is not None
        assert list(result.env_names) == _seen(fakes, name)
        assert "SECRET_TOKEN_VALUE" not in result.env_names
        assert not any("=" in n or "never-a-name" in n for n in result.env_names)
    assert claude.env_names is not None
    assert ("ANTHROPIC_API_KEY" in claude.env_names) is (route_name == "rehearsal")

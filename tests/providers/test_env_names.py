"""Each profile reports the names of the environment its CLI got (issue 8 §6:
``child_env_names``): exactly the names the fake CLI saw, sorted, never a value."""

from __future__ import annotations

import os
import subprocess
import time
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


def _env_of(fakes: Fakes, name: str) -> dict[str, str]:
    env = next(r for r in fakes.records("run") if r["name"] == name)["env"]
    assert isinstance(env, dict)
    return env


async def test_the_reviewer_gets_no_optional_git_locks_and_the_worker_its_own_git(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    """The reviewer's git must not write the index back as a side effect of a read
    (design/agent.md, P-3); the worker refreshes its own index, so it is left alone."""
    await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="x", scratch=scratch, timeout_ms=10_000, route=SubscriptionRoute()
    )
    await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="x", timeout_ms=10_000, route=SubscriptionRoute()
    )
    assert _env_of(fakes, "codex").get("GIT_OPTIONAL_LOCKS") == "0"
    assert "GIT_OPTIONAL_LOCKS" not in _env_of(fakes, "claude")  # negative control
    argv = next(r for r in fakes.records("run") if r["name"] == "codex")["argv"]
    assert isinstance(argv, list)
    assert 'shell_environment_policy.set.GIT_OPTIONAL_LOCKS="0"' in argv  # its shell tools


@pytest.mark.parametrize(("optional_locks", "rewritten"), [("0", False), (None, True)])
def test_git_status_rewrites_the_index_only_with_optional_locks(
    worktree: Path, optional_locks: str | None, rewritten: bool
) -> None:
    """Why: a plain ``git status`` after a touch refreshes and writes the index; with
    ``GIT_OPTIONAL_LOCKS=0`` it reads the same and writes nothing."""
    index, readme = worktree / ".git" / "index", worktree / "README.md"
    env = {k: v for k, v in os.environ.items() if k != "GIT_OPTIONAL_LOCKS"}
    past = time.time() - 60
    os.utime(readme, (past, past))  # settle the index with no racy entry first
    subprocess.run(["git", "status", "--porcelain"], cwd=worktree, env=env, check=True)
    before = index.read_bytes()
    os.utime(readme, (past + 1, past + 1))  # stat data changes, content does not
    if optional_locks is not None:
        env["GIT_OPTIONAL_LOCKS"] = optional_locks
    subprocess.run(["git", "status", "--porcelain"], cwd=worktree, env=env, check=True)
    assert (index.read_bytes() != before) is rewritten

"""The fault table of issue 4: each fake-CLI failure maps to its typed P-4 failure,
within deadline + grace, with no process left behind (the ``fakes`` fixture checks)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from factory.errors import ProviderFailure
from factory.provider_api import RehearsalRoute, SubscriptionRoute
from providers import ClaudeProfile, CodexProfile, Effects
from tests.providers.helpers import GRACE_S
from tests.support.fake_cli import Fakes

SUB = SubscriptionRoute()


async def _claude_fails(
    effects: Effects, worktree: Path, route: object, timeout_ms: int = 10_000
) -> tuple[ProviderFailure, float]:
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as info:
        await ClaudeProfile(effects).run_agent(
            role="worker",
            worktree=worktree,
            prompt="do it",
            timeout_ms=timeout_ms,
            route=route,  # type: ignore[arg-type]
        )
    return info.value, time.monotonic() - started


async def _codex_fails(
    effects: Effects, worktree: Path, scratch: Path, route: object, timeout_ms: int = 10_000
) -> tuple[ProviderFailure, float]:
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as info:
        await CodexProfile(effects).run_reviewer(
            worktree=worktree,
            prompt="review",
            scratch=scratch,
            timeout_ms=timeout_ms,
            route=route,  # type: ignore[arg-type]
        )
    return info.value, time.monotonic() - started


# --- successes (negative-control twins of every failure below) ---------------------------


async def test_claude_worker_succeeds(fakes: Fakes, effects: Effects, worktree: Path) -> None:
    res = await ClaudeProfile(effects).run_agent(
        role="worker", worktree=worktree, prompt="edit please", timeout_ms=10_000, route=SUB
    )
    assert res.profile == "claude" and res.role == "worker" and res.exit_code == 0
    assert res.cli_version == "2.1.332 (Claude Code)"
    assert res.requested_authority == "accept-edits-in-worktree"
    assert (worktree / "worker-was-here.txt").read_text() == "edited\n"
    assert res.argv_shape[0] == "claude" and str(worktree) not in " ".join(res.argv_shape)
    run = fakes.records("run")[0]
    assert run["prompt"] == "edit please" and run["cwd"] == str(worktree)
    assert b'"type": "result"' in res.streams["stdout"].read()


async def test_claude_repair_role_has_its_own_turn_cap(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    res = await ClaudeProfile(effects).run_agent(
        role="repair", worktree=worktree, prompt="fix", timeout_ms=10_000, route=SUB
    )
    argv = list(res.argv_shape)
    assert res.role == "repair" and argv[argv.index("--max-turns") + 1] == "20"


async def test_claude_refuses_the_reviewer_role(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    with pytest.raises(ProviderFailure):
        await ClaudeProfile(effects).run_agent(
            role="reviewer", worktree=worktree, prompt="x", timeout_ms=10_000, route=SUB
        )
    assert fakes.records("run") == []


async def test_codex_reviewer_succeeds(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    res = await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="review it", scratch=scratch, timeout_ms=10_000, route=SUB
    )
    assert res.verdict is not None and res.verdict.verdict == "APPROVE"
    assert res.verdict.summary == "looks right"
    assert res.cli_version == "codex-cli 0.171.0" and res.requested_authority == "read-only-sandbox"
    run = fakes.records("run")[0]
    assert run["prompt"] == "review it"
    assert run["schema"]["additionalProperties"] is False  # type: ignore[index]
    assert "<scratch>/verdict.json" in res.argv_shape and "<worktree>" in res.argv_shape


# --- not logged in -------------------------------------------------------------------------


async def test_claude_not_logged_in_preflight(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="not-logged-in")
    exc, _ = await _claude_fails(effects, worktree, SUB)
    assert exc.code == "provider-auth-required"
    assert fakes.records("run") == []  # refused before the agent ran


async def test_claude_not_logged_in_reported_by_the_run(
    fakes: Fakes, effects: Effects, worktree: Path, rehearsal: RehearsalRoute
) -> None:
    fakes.mode(claude="not-logged-in-run")
    exc, _ = await _claude_fails(effects, worktree, rehearsal)
    assert exc.code == "provider-auth-required"


async def test_codex_not_logged_in(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    fakes.mode(codex="not-logged-in")
    exc, _ = await _codex_fails(effects, worktree, scratch, SUB)
    assert exc.code == "provider-auth-required" and fakes.records("run") == []


async def test_codex_unauthorized_turn_failed(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    fakes.mode(codex="unauthorized")
    exc, _ = await _codex_fails(effects, worktree, scratch, SUB)
    assert exc.code == "provider-auth-required"


# --- error results, protocol violations ---------------------------------------------------


async def test_claude_exit_zero_with_is_error(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="is-error-exit0")
    exc, _ = await _claude_fails(effects, worktree, SUB)
    assert exc.code == "provider-failed" and "500" in exc.message


async def test_claude_connection_failed(fakes: Fakes, effects: Effects, worktree: Path) -> None:
    fakes.mode(claude="connection-failed")
    exc, _ = await _claude_fails(effects, worktree, SUB)
    assert exc.code == "provider-network"


async def test_claude_exit_zero_without_result(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="no-result")
    exc, _ = await _claude_fails(effects, worktree, SUB)
    assert exc.code == "provider-protocol"


@pytest.mark.parametrize("mode", ["bad-verdict", "extra-key", "prose-verdict"])
async def test_codex_verdict_violating_the_schema(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path, mode: str
) -> None:
    fakes.mode(codex=mode)
    exc, _ = await _codex_fails(effects, worktree, scratch, SUB)
    assert exc.code == "provider-protocol"


# --- hangs: deadline + grace, nothing left behind ----------------------------------------

DEADLINE_MS = 1_500
LIMIT_S = DEADLINE_MS / 1000 + GRACE_S + 1.0


async def test_codex_network_loss_never_exits(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    fakes.mode(codex="network-loss")
    exc, elapsed = await _codex_fails(effects, worktree, scratch, SUB, DEADLINE_MS)
    assert exc.code == "provider-network" and elapsed < LIMIT_S


async def test_claude_retry_storm_is_network(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="retry-storm")
    exc, elapsed = await _claude_fails(effects, worktree, SUB, DEADLINE_MS)
    assert exc.code == "provider-network" and elapsed < LIMIT_S


async def test_claude_fifty_megabyte_line(fakes: Fakes, effects: Effects, worktree: Path) -> None:
    fakes.mode(claude="big-line")
    exc, elapsed = await _claude_fails(effects, worktree, SUB)
    assert exc.code == "provider-output-limit" and elapsed < 10


async def test_claude_closes_stdout_and_keeps_running(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="close-stdout")
    exc, elapsed = await _claude_fails(effects, worktree, SUB, DEADLINE_MS)
    assert exc.code == "provider-timeout" and elapsed < LIMIT_S


async def test_claude_stubborn_reforking_tree(
    fakes: Fakes, effects: Effects, worktree: Path
) -> None:
    fakes.mode(claude="stubborn-tree")
    exc, elapsed = await _claude_fails(effects, worktree, SUB, DEADLINE_MS)
    assert exc.code == "provider-timeout" and elapsed < LIMIT_S
    assert len(fakes.records()) >= 1 + 2 + 2 * 3  # leader, 2 children, their re-forks


async def test_codex_stubborn_reforking_tree(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    fakes.mode(codex="stubborn-tree")
    exc, elapsed = await _codex_fails(effects, worktree, scratch, SUB, DEADLINE_MS)
    assert exc.code == "provider-timeout" and elapsed < LIMIT_S
    assert len(fakes.records("stubborn1")) >= 3


async def test_codex_reads_stdin_until_eof_and_finishes(
    fakes: Fakes, effects: Effects, worktree: Path, scratch: Path
) -> None:
    # The fake blocks on stdin like Codex ("Reading additional input from stdin...");
    # it finishes well before the deadline only because the profile closes stdin.
    started = time.monotonic()
    res = await CodexProfile(effects).run_reviewer(
        worktree=worktree, prompt="p" * 200_000, scratch=scratch, timeout_ms=20_000, route=SUB
    )
    assert res.verdict is not None and time.monotonic() - started < 10
    assert len(str(fakes.records("run")[0]["prompt"])) == 200_000


def test_survivor_check_sees_an_unsupervised_tree(fakes: Fakes, worktree: Path) -> None:
    # Negative control for the fixture's no-survivor check: the same stubborn fake run
    # without the supervisor, killing only its leader, leaves processes behind.
    import os
    import signal
    import subprocess

    fakes.mode(claude="stubborn-tree")
    proc = subprocess.Popen(
        [str(fakes.bin / "claude"), "-p"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        cwd=worktree,
        start_new_session=True,
    )
    try:
        fakes.wait_records("stubborn1", 6, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    left = fakes.survivors()
    assert len(left) >= 2
    # Clean up by hand: kill until nothing recorded survives (each round may meet a
    # process forked since the last look); orphans re-parent to this subreaper: reap them.
    deadline = time.monotonic() + 10
    while (left := fakes.survivors()) and time.monotonic() < deadline:
        for doc in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(doc["pid"]), signal.SIGKILL)  # type: ignore[call-overload]
        time.sleep(0.05)
        for doc in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(doc["pid"]), os.WNOHANG)  # type: ignore[call-overload]


def test_waiting_for_records_that_never_come_fails_loudly(fakes: Fakes) -> None:
    with pytest.raises(AssertionError, match=r"0 'run' record\(s\) after 0.1 s, wanted 1"):
        fakes.wait_records("run", 1, timeout=0.1)


def test_twin_waiting_for_records_that_exist_returns(fakes: Fakes) -> None:
    import json

    folder = fakes.bin / "records"
    folder.mkdir(exist_ok=True)
    (folder / "1.json").write_text(json.dumps({"kind": "run", "pid": 1, "create_time": 0.0}))
    fakes.wait_records("run", 1, timeout=0.1)

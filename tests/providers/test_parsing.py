"""Pure decisions of the profiles: stream parsing and P-4 classification (no processes),
plus the profiles' failure mapping with an injected runner on trio's MockClock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
import trio.testing

from factory.errors import ProviderFailure
from factory.proc import Captured, ProcessFailure, RunResult, RunSpec, SweepReport
from factory.proc.runner import TIMEOUT
from factory.provider_api import SubscriptionRoute
from providers import ClaudeProfile, CodexProfile, Effects, claude, codex, codex_output


def lines(*events: object) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def result(**kw: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "terminal_reason": "completed",
    }
    doc.update(kw)
    return doc


@pytest.mark.parametrize(
    ("res", "rc", "code"),
    [
        (result(), 0, None),
        (
            result(is_error=True, result="Not logged in · Please run /login"),
            1,
            "provider-auth-required",
        ),
        (
            result(
                is_error=True, result="Invalid API key · Fix external API key", api_error_status=401
            ),
            1,
            "provider-auth-required",
        ),
        (
            result(
                is_error=True, result="API Error: Connection refused", api_error="connection_failed"
            ),
            1,
            "provider-network",
        ),
        (
            result(is_error=True, result="API Error: 529 overloaded", api_error_status=529),
            0,
            "provider-failed",
        ),
        (result(subtype="error_max_turns", terminal_reason="max_turns"), 1, "provider-failed"),
        (result(subtype="error_max_budget_usd"), 1, "provider-failed"),
        (result(), 1, "provider-protocol"),
    ],
)
def test_claude_classification(res: dict[str, object], rc: int, code: str | None) -> None:
    stream = claude.parse_stream(lines({"type": "system", "subtype": "init"}, res))
    got = claude.classify(stream, rc, b"")
    assert (got[0].name if got else None) == code


def test_claude_last_result_wins_and_truncated_lines_are_tolerated() -> None:
    data = lines(result(is_error=True, result="x"), result()) + b'{"type": "assi'
    stream = claude.parse_stream(data)
    assert stream.garbage_lines == 1 and claude.classify(stream, 0, b"") is None


def test_claude_no_result_with_nonzero_exit_names_stderr() -> None:
    got = claude.classify(claude.parse_stream(b""), 1, b"error: unknown option '--bogus'\n")
    assert got is not None and got[0].name == "provider-failed" and "--bogus" in got[1]


@pytest.mark.parametrize(
    ("events", "rc", "code"),
    [
        ([{"type": "turn.started"}, {"type": "turn.completed"}], 0, None),
        (
            [{"type": "error", "message": "Reconnecting... 1/5 (x)"}, {"type": "turn.completed"}],
            0,
            None,
        ),
        (
            [{"type": "turn.failed", "error": {"message": "unexpected status 403 Forbidden"}}],
            1,
            "provider-auth-required",
        ),
        (
            [
                {
                    "type": "turn.failed",
                    "error": {"message": "stream disconnected before completion"},
                }
            ],
            1,
            "provider-network",
        ),
        (
            [{"type": "turn.failed", "error": {"message": "context window exceeded"}}],
            1,
            "provider-failed",
        ),
        ([{"type": "thread.started"}], 0, "provider-protocol"),
        ([], 2, "provider-failed"),
    ],
)
def test_codex_classification(events: list[object], rc: int, code: str | None) -> None:
    got = codex_output.classify(codex_output.parse_events(lines(*events)), rc, b"")
    assert (got[0].name if got else None) == code


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"  \n",
        b"not json",
        b"[]",
        b'{"verdict": "APPROVE"}',
        b'{"verdict": "approve", "summary": "s"}',
        b'{"verdict": "APPROVE", "summary": 3}',
        b'{"verdict": "APPROVE", "summary": "s", "extra": true}',
    ],
)
def test_verdicts_violating_the_schema(raw: bytes) -> None:
    with pytest.raises(ProviderFailure) as info:
        codex_output.parse_verdict(raw)
    assert info.value.code == "provider-protocol"


@pytest.mark.parametrize("value", ["APPROVE", "REQUEST_CHANGES"])
def test_conforming_verdicts(value: str) -> None:
    got = codex_output.parse_verdict(json.dumps({"verdict": value, "summary": "why"}).encode())
    assert got.verdict == value and got.summary == "why"


def test_verdict_schema_is_strict() -> None:
    schema = codex_output.VERDICT_SCHEMA
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"]) == {"verdict", "summary"}


def test_claude_argv_is_fixed_and_safe(tmp_path: Path) -> None:
    argv = claude.build_argv(tmp_path / "claude", "worker")
    assert "--dangerously-skip-permissions" not in argv and "bypassPermissions" not in argv
    for flag, value in (
        ("--permission-mode", "acceptEdits"),
        ("--setting-sources", "user"),
        ("--output-format", "stream-json"),
        ("--max-turns", "40"),
    ):
        assert argv[argv.index(flag) + 1] == value
    assert {"-p", "--verbose", "--strict-mcp-config", "--no-session-persistence"} <= set(argv)


def test_codex_argv_reads_the_prompt_from_stdin(tmp_path: Path) -> None:
    argv = codex.build_argv(
        tmp_path / "codex",
        worktree=tmp_path,
        schema_file=tmp_path / "s",
        verdict_file=tmp_path / "v",
        route=SubscriptionRoute(),
    )
    assert argv[1] == "exec" and argv[-1] == "-"
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert 'approval_policy="never"' in argv and "--ephemeral" in argv
    assert not any("model_provider" in a for a in argv)  # subscription: the CLI's own


def _timeout_effects(stdout: bytes, bin_dir: Path) -> Effects:
    """Effects whose runner answers the probes and times the main run out."""

    async def runner(spec: RunSpec) -> RunResult:
        sweep = SweepReport(signalled=True, killed=True, members_seen=0, survivors=())
        if spec.argv[1:] == ["--version"]:
            return RunResult(0, Captured.of(b"9.9.9\n"), Captured.of(b""), 1, None, sweep)
        if spec.argv[1:3] in (["auth", "status"], ["login", "status"]):
            return RunResult(
                0, Captured.of(b'{"loggedIn": true}'), Captured.of(b""), 1, None, sweep
            )
        await trio.sleep(spec.timeout_s)
        ms = int(spec.timeout_s * 1000)
        res = RunResult(-9, Captured.of(stdout), Captured.of(b""), ms, "timeout", sweep)
        raise ProcessFailure("deadline", code=TIMEOUT, result=res)

    return Effects(runner=runner, environ={"PATH": str(bin_dir)}, fallback_dirs=())


@pytest.mark.parametrize(
    ("stdout", "code"),
    [
        (lines({"type": "system", "subtype": "api_retry", "attempt": 1}), "provider-network"),
        (lines({"type": "system", "subtype": "init"}), "provider-timeout"),
    ],
)
async def test_claude_deadline_mapping(
    autojump_clock: trio.testing.MockClock, tmp_path: Path, stdout: bytes, code: str
) -> None:
    exe = tmp_path / "claude"
    exe.write_bytes(Path("/bin/true").read_bytes())
    exe.chmod(0o755)
    fx = _timeout_effects(stdout, tmp_path)
    with pytest.raises(ProviderFailure) as info:
        await ClaudeProfile(fx).run_agent(
            role="worker",
            worktree=tmp_path,
            prompt="x",
            timeout_ms=3_600_000,
            route=SubscriptionRoute(),
        )
    assert info.value.code == code
    assert trio.current_time() >= 3600 - 1  # an hour of virtual time, no real wait


async def test_codex_deadline_with_reconnects_is_network(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    exe = tmp_path / "codex"
    exe.write_bytes(Path("/bin/true").read_bytes())
    exe.chmod(0o755)
    stdout = lines({"type": "error", "message": "Reconnecting... waiting for network"})
    fx = _timeout_effects(stdout, tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(ProviderFailure) as info:
        await CodexProfile(fx).run_reviewer(
            worktree=tmp_path,
            prompt="x",
            scratch=scratch,
            timeout_ms=600_000,
            route=SubscriptionRoute(),
        )
    assert info.value.code == "provider-network"

"""Contract tests: the pinned real CLIs against the scripted loopback model (SPEC P-5, P-6).

The contract runs go through the closed profiles end to end (binary resolution, the exact
argv and env they build, the supervised runner, their output parsers). Each refusal has a
negative-control twin that changes exactly one flag of the profile's argv and shows the
same script then does have its effect.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
import trio

from factory.errors import ProviderFailure
from factory.provider_api import RehearsalRoute, Verdict
from factory.rehearsal import (
    DEMO_SCENARIO,
    RehearsalIncomplete,
    RehearsalSession,
    Scenario,
    load_scenario,
    open_rehearsal,
    parse_scenario,
)
from tests.rehearsal import realcli
from tests.support.git import add_linked_worktree, git, init_repo

pytestmark = pytest.mark.realcli

VERDICT = '{"verdict":"REQUEST_CHANGES","summary":"add a test"}'


def scenario(*invocations: Mapping[str, object]) -> Scenario:
    doc = {"schema": "factory.rehearsal-scenario/1", "invocations": list(invocations)}
    return parse_scenario(json.dumps(doc).encode())


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo", {"app.py": "VALUE = 1\n"})
    return add_linked_worktree(repo, tmp_path / "wt")


def result_event(stdout: bytes) -> dict[str, object]:
    results = [e for e in realcli.jsonl(stdout) if e.get("type") == "result"]
    assert results
    return results[-1]


def assert_clean_log(session: RehearsalSession) -> None:
    """Script fully consumed; every request carried the route's key, never a sentinel."""
    session.check_consumed()
    assert session.requests
    assert all(r.authorized for r in session.requests if r.path.startswith("/v1/"))
    assert all(not {"x-api-key", "authorization"} & set(r.headers) for r in session.requests)


async def test_claude_worker_edits_the_worktree_through_its_own_tools(
    tmp_path: Path, worktree: Path
) -> None:
    script = scenario(
        {
            "role": "worker",
            "tool_calls": [
                {"tool": "Write", "file_path": "notes.txt", "content": "written by Write\n"},
                {"tool": "Read", "file_path": "app.py"},
                {
                    "tool": "Edit",
                    "file_path": "app.py",
                    "old_string": "VALUE = 1",
                    "new_string": "VALUE = 2",
                },
            ],
            "final_message": "Edited app.py and wrote notes.txt.",
        }
    )
    async with open_rehearsal(script, tmp_path / "route") as session:
        result = await realcli.claude_profile().run_agent(
            role="worker",
            worktree=worktree,
            prompt="Change VALUE to 2; write notes.txt.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
        )
        assert_clean_log(session)
        requests = session.requests

    assert result.exit_code == 0 and result.cli_version == "2.1.332 (Claude Code)"
    final = result_event(result.streams["stdout"].read())
    assert final["is_error"] is False and final["terminal_reason"] == "completed"
    assert final["result"] == "Edited app.py and wrote notes.txt."
    assert final["permission_denials"] == []
    assert (worktree / "notes.txt").read_text() == "written by Write\n"
    assert (worktree / "app.py").read_text() == "VALUE = 2\n"
    assert git(worktree, "status", "--porcelain").splitlines() == [" M app.py", "?? notes.txt"]
    scripted = [r for r in requests if r.outcome == "scripted"]
    assert [(r.invocation, r.turn) for r in scripted] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert "created successfully" in (scripted[1].tool_result or "")
    assert "updated successfully" in (scripted[3].tool_result or "")


async def _review(
    tmp_path: Path, worktree: Path, script: Scenario
) -> tuple[Verdict | None, list[str | None], dict[str, bytes]]:
    async with open_rehearsal(script, tmp_path / "route") as session:
        result = await realcli.codex_profile().run_reviewer(
            worktree=worktree,
            prompt="Review the change.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
            scratch=tmp_path,
        )
        assert_clean_log(session)
        results = [r.tool_result for r in session.requests if r.outcome == "scripted"]
    assert result.exit_code == 0 and result.cli_version == "codex-cli 0.171.0"
    assert realcli.jsonl(result.streams["stdout"].read())[-1]["type"] == "turn.completed"
    return result.verdict, results, result.outputs


async def test_codex_reviewer_returns_a_verdict_file(tmp_path: Path, worktree: Path) -> None:
    verdict, results, outputs = await _review(
        tmp_path,
        worktree,
        scenario(
            {
                "role": "reviewer",
                "tool_calls": [{"tool": "shell", "command": "cat app.py"}],
                "final_message": VERDICT,
            }
        ),
    )
    assert verdict == Verdict(verdict="REQUEST_CHANGES", summary="add a test")
    assert json.loads(outputs["verdict"]) == json.loads(VERDICT)
    assert results[0] is None and "VALUE = 1" in (results[1] or "")


async def test_codex_reviewer_runs_every_scripted_shell_call_before_the_verdict(
    tmp_path: Path, worktree: Path
) -> None:
    # Reported: "with two reviewer shell calls only the first ran before the final message".
    # The turn is the number of function_call items Codex sends back, so call k's output
    # must arrive with the request for turn k+1; the sandbox-refused write must not end it.
    _, results, _ = await _review(
        tmp_path,
        worktree,
        scenario(
            {
                "role": "reviewer",
                "tool_calls": [
                    {"tool": "shell", "command": "echo first-call-ran"},
                    {"tool": "shell", "command": "echo blocked > reviewer-wrote.txt"},
                    {"tool": "shell", "command": "echo third-call-ran"},
                ],
                "final_message": VERDICT,
            }
        ),
    )
    assert len(results) == 4 and results[0] is None
    assert "first-call-ran" in (results[1] or "")
    assert "Read-only file system" in (results[2] or "")
    assert "third-call-ran" in (results[3] or "")
    assert not (worktree / "reviewer-wrote.txt").exists()


WRITE_ATTEMPT = {
    "role": "reviewer",
    "tool_calls": [{"tool": "shell", "command": "echo tampered > reviewer-wrote.txt"}],
    "final_message": VERDICT,
}


async def test_codex_read_only_sandbox_refuses_a_scripted_write(
    tmp_path: Path, worktree: Path
) -> None:
    verdict, results, _ = await _review(tmp_path, worktree, scenario(WRITE_ATTEMPT))
    assert not (worktree / "reviewer-wrote.txt").exists()
    assert "Read-only file system" in (results[-1] or "")
    assert verdict is not None and verdict.verdict == "REQUEST_CHANGES"
    assert git(worktree, "status", "--porcelain") == ""


async def test_codex_write_twin_succeeds_outside_the_read_only_sandbox(
    tmp_path: Path, worktree: Path
) -> None:
    # Negative control: the profile's argv with only "--sandbox read-only" changed to
    # workspace-write lets the same scripted command write, so the refusal above is the
    # sandbox's doing, not a broken command.
    async with open_rehearsal(scenario(WRITE_ATTEMPT), tmp_path / "route") as session:
        argv, env, verdict = realcli.codex_argv_env(session.route, worktree, tmp_path / "s")
        at = argv.index("--sandbox")
        assert argv[at + 1] == "read-only"
        argv[at + 1] = "workspace-write"
        ran = await realcli.run_cli(argv, env, worktree, b"Review.")
        assert_clean_log(session)
        results = [r.tool_result for r in session.requests if r.outcome == "scripted"]
    assert ran.returncode == 0, ran.stderr.decode()
    assert (worktree / "reviewer-wrote.txt").read_text() == "tampered\n"
    assert "exited with code 0" in (results[-1] or "")
    assert json.loads(verdict.read_text()) == json.loads(VERDICT)


def _plant_hooks(worktree: Path, markers: Path) -> None:
    markers.mkdir()

    def touch(name: str) -> dict[str, object]:
        return {"hooks": [{"type": "command", "command": f"touch {markers / name}"}]}

    settings = {
        "hooks": {
            "SessionStart": [touch("session-start")],
            "PreToolUse": [{"matcher": "*", **touch("pre-tool-use")}],
        }
    }
    (worktree / ".claude").mkdir()
    (worktree / ".claude" / "settings.json").write_text(json.dumps(settings))
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", "repository hooks")


HOOKED_WORK = {
    "role": "worker",
    "tool_calls": [{"tool": "Write", "file_path": "out.txt", "content": "x\n"}],
    "final_message": "done",
}


async def test_repository_hooks_do_not_run_with_user_setting_sources(
    tmp_path: Path, worktree: Path
) -> None:
    markers = tmp_path / "markers"
    _plant_hooks(worktree, markers)
    async with open_rehearsal(scenario(HOOKED_WORK), tmp_path / "route") as session:
        result = await realcli.claude_profile().run_agent(
            role="worker",
            worktree=worktree,
            prompt="Write out.txt.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
        )
        assert_clean_log(session)
    assert result.exit_code == 0
    assert (worktree / "out.txt").read_text() == "x\n"
    assert sorted(p.name for p in markers.iterdir()) == []


async def test_repository_hooks_twin_runs_them_without_setting_sources(
    tmp_path: Path, worktree: Path
) -> None:
    # Negative control: the profile's argv minus "--setting-sources user" runs the same
    # hooks, so their absence above is that flag's doing.
    markers = tmp_path / "markers"
    _plant_hooks(worktree, markers)
    async with open_rehearsal(scenario(HOOKED_WORK), tmp_path / "route") as session:
        argv, env = realcli.claude_argv_env(session.route)
        at = argv.index("--setting-sources")
        assert argv[at + 1] == "user"
        del argv[at : at + 2]
        ran = await realcli.run_cli(argv, env, worktree, b"Write out.txt.")
        assert_clean_log(session)
    assert ran.returncode == 0, ran.stderr.decode()
    assert (worktree / "out.txt").read_text() == "x\n"
    assert sorted(p.name for p in markers.iterdir()) == ["pre-tool-use", "session-start"]


async def test_demo_scenario_runs_end_to_end_through_both_profiles(
    tmp_path: Path, worktree: Path
) -> None:
    script = load_scenario(DEMO_SCENARIO)
    verdicts = []
    async with open_rehearsal(script, tmp_path / "route") as session:
        route: RehearsalRoute = session.route
        for n, invocation in enumerate(script.invocations):
            if invocation.role == "reviewer":
                scratch = tmp_path / f"scratch-{n}"
                scratch.mkdir()
                review = await realcli.codex_profile().run_reviewer(
                    worktree=worktree,
                    prompt="Review.",
                    timeout_ms=realcli.TIMEOUT_MS,
                    route=route,
                    scratch=scratch,
                )
                assert review.verdict is not None
                verdicts.append(review.verdict.verdict)
            else:
                work = await realcli.claude_profile().run_agent(
                    role=invocation.role,
                    worktree=worktree,
                    prompt="Work.",
                    timeout_ms=realcli.TIMEOUT_MS,
                    route=route,
                )
                assert result_event(work.streams["stdout"].read())["is_error"] is False
        assert_clean_log(session)
        progress = session.progress()

    assert verdicts == ["REQUEST_CHANGES", "APPROVE"]
    assert [len(p.served_turns) for p in progress] == [2, 2, 2, 2]
    assert git(worktree, "status", "--porcelain").splitlines() == [
        "?? greeting.py",
        "?? test_greeting.py",
    ]


async def test_a_cli_asking_outside_the_script_fails_fast_and_is_reported(
    tmp_path: Path, worktree: Path
) -> None:
    # The scenario has no worker invocation: Claude's first request is a violation. The
    # 400 answer must end the run at once (no retry loop until the deadline).
    only_review = scenario({"role": "reviewer", "final_message": VERDICT})
    async with open_rehearsal(only_review, tmp_path / "route") as session:
        with trio.fail_after(15), pytest.raises(ProviderFailure) as caught:
            await realcli.claude_profile().run_agent(
                role="worker",
                worktree=worktree,
                prompt="Work.",
                timeout_ms=realcli.TIMEOUT_MS,
                route=session.route,
            )
        problems = session.problems()
        with pytest.raises(RehearsalIncomplete):
            session.check_consumed()
    assert caught.value.code == "provider-failed"
    assert problems[0] == "anthropic conversation #1 but the scenario has only 0 for that API"
    assert git(worktree, "status", "--porcelain") == ""


async def test_codex_asking_outside_the_script_fails_fast_and_is_reported(
    tmp_path: Path, worktree: Path
) -> None:
    only_work = scenario({"role": "worker", "final_message": "done"})
    async with open_rehearsal(only_work, tmp_path / "route") as session:
        with trio.fail_after(15), pytest.raises(ProviderFailure) as caught:
            await realcli.codex_profile().run_reviewer(
                worktree=worktree,
                prompt="Review.",
                timeout_ms=realcli.TIMEOUT_MS,
                route=session.route,
                scratch=tmp_path,
            )
        problems = session.problems()
    assert caught.value.code == "provider-failed"
    assert problems[0] == "openai conversation #1 but the scenario has only 0 for that API"


SENTINELS = tuple(
    value
    for name, value in realcli.CALLER_ENVIRON.items()
    if name not in ("PATH", "LANG", "CLAUDECODE")  # CLAUDECODE=1 is set by Claude itself
)


async def test_no_sentinel_reaches_claude_children(tmp_path: Path, worktree: Path) -> None:
    # A *user-level* hook (the route's own CLAUDE_CONFIG_DIR, read with --setting-sources
    # user) dumps the env Claude gives its children: sentinels from the caller never
    # arrive; the route's endpoint does (the positive control that we read the right env).
    dump = tmp_path / "claude-child-env"
    async with open_rehearsal(scenario(HOOKED_WORK), tmp_path / "route") as session:
        hook = {"hooks": [{"type": "command", "command": f"env > {dump}"}]}
        settings = session.route.config_root / "claude" / "settings.json"
        settings.write_text(json.dumps({"hooks": {"SessionStart": [hook]}}))
        await realcli.claude_profile().run_agent(
            role="worker",
            worktree=worktree,
            prompt="Write out.txt.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
        )
        assert_clean_log(session)
        route = session.route
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert seen["ANTHROPIC_BASE_URL"] == route.base_url
    assert seen["HOME"] == str(route.config_root / "home")
    assert not [v for v in SENTINELS if v in dump.read_text()]


async def test_no_sentinel_or_key_reaches_codex_tool_processes(
    tmp_path: Path, worktree: Path
) -> None:
    async with open_rehearsal(
        scenario(
            {
                "role": "reviewer",
                "tool_calls": [{"tool": "shell", "command": "env | sort"}],
                "final_message": VERDICT,
            }
        ),
        tmp_path / "route",
    ) as session:
        await realcli.codex_profile().run_reviewer(
            worktree=worktree,
            prompt="Review.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
            scratch=tmp_path,
        )
        assert_clean_log(session)
        output = session.requests[-1].tool_result or ""
        route = session.route
    assert f"HOME={route.config_root / 'home'}" in output  # positive control
    assert not [v for v in SENTINELS if v in output]
    assert route.api_key not in output
    # The reviewer's git takes no optional locks, so its read commands never write the
    # refreshed index back (design/agent.md, P-3).
    assert "GIT_OPTIONAL_LOCKS=0" in output.splitlines()


async def test_worker_bash_outside_the_allow_list_is_denied_and_inside_runs(
    tmp_path: Path, worktree: Path
) -> None:
    # Refusal and its twin in one run: the profile's permission rules (acceptEdits,
    # --permission-prompts none, the allow-list) deny a Python one-liner that would
    # write, and let the allow-listed "git status" run.
    async with open_rehearsal(
        scenario(
            {
                "role": "worker",
                "tool_calls": [
                    {"tool": "Bash", "command": 'python3 -c \'open("py-made", "w")\''},
                    {"tool": "Bash", "command": "git status"},
                ],
                "final_message": "done",
            }
        ),
        tmp_path / "route",
    ) as session:
        result = await realcli.claude_profile().run_agent(
            role="worker",
            worktree=worktree,
            prompt="Work.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
        )
        assert_clean_log(session)
        results = [r.tool_result or "" for r in session.requests if r.outcome == "scripted"]
    final = result_event(result.streams["stdout"].read())
    denied = final["permission_denials"]
    assert isinstance(denied, list) and len(denied) == 1
    assert denied[0]["tool_input"]["command"].startswith("python3")
    assert results[1].startswith("[is_error] Permission for this tool use was denied")
    assert not (worktree / "py-made").exists()
    assert results[2].startswith("On branch work")  # git status ran

"""Contract tests: the pinned real CLIs against the scripted loopback model (SPEC P-5, P-6).

Each test runs the real Claude Code or Codex binary from ``node_modules`` with the
profile argv, a child env built from empty, and the route the rehearsal session minted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.rehearsal import DEMO_SCENARIO, Scenario, load_scenario, open_rehearsal, parse_scenario
from tests.rehearsal import realcli
from tests.support.git import add_linked_worktree, git, init_repo

pytestmark = pytest.mark.realcli

VERDICT = '{"verdict":"REQUEST_CHANGES","summary":"add a test"}'


def scenario(*invocations: dict[str, object]) -> Scenario:
    doc = {"schema": "factory.rehearsal-scenario/1", "invocations": list(invocations)}
    return parse_scenario(json.dumps(doc).encode())


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo", {"app.py": "VALUE = 1\n"})
    return add_linked_worktree(repo, tmp_path / "wt")


@pytest.fixture
def child_home(tmp_path: Path) -> Path:
    home = tmp_path / "child-home"
    home.mkdir()
    return home


def result_event(ran: realcli.Ran) -> dict[str, object]:
    results = [e for e in ran.events() if e.get("type") == "result"]
    assert results, ran.stderr.decode()
    return results[-1]


async def test_claude_worker_edits_the_worktree_through_its_own_tools(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    script = scenario({
        "role": "worker",
        "tool_calls": [
            {"tool": "Write", "file_path": "notes.txt", "content": "written by Write\n"},
            {"tool": "Read", "file_path": "app.py"},
            {"tool": "Edit", "file_path": "app.py", "old_string": "VALUE = 1",
             "new_string": "VALUE = 2"},
        ],
        "final_message": "Edited app.py and wrote notes.txt.",
    })
    async with open_rehearsal(script, tmp_path / "route") as session:
        ran = await realcli.run_cli(
            realcli.claude_worker_argv(), realcli.claude_env(session.route, child_home),
            worktree, b"Change VALUE to 2 and write notes.txt.",
        )
        session.check_consumed()
        requests = session.requests

    result = result_event(ran)
    assert ran.returncode == 0, ran.stderr.decode()
    assert result["is_error"] is False and result["terminal_reason"] == "completed"
    assert result["result"] == "Edited app.py and wrote notes.txt."
    assert result["permission_denials"] == []
    assert (worktree / "notes.txt").read_text() == "written by Write\n"
    assert (worktree / "app.py").read_text() == "VALUE = 2\n"
    assert git(worktree, "status", "--porcelain").splitlines() == [" M app.py", "?? notes.txt"]
    scripted = [r for r in requests if r.outcome == "scripted"]
    assert [(r.invocation, r.turn) for r in scripted] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert all(r.authorized for r in requests)
    assert "updated successfully" in (scripted[3].tool_result or "")
    assert all("x-api-key" not in r.headers for r in requests)


def _verdict_schema_file(tmp_path: Path) -> Path:
    schema = tmp_path / "verdict.schema.json"
    schema.write_text(json.dumps(realcli.VERDICT_SCHEMA))
    return schema


def _assert_verdict(path: Path) -> dict[str, object]:
    value = json.loads(path.read_text())
    assert set(value) == {"verdict", "summary"}
    assert value["verdict"] in ("APPROVE", "REQUEST_CHANGES")
    assert isinstance(value["summary"], str)
    return value


async def test_codex_reviewer_returns_a_verdict_file(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    script = scenario({
        "role": "reviewer",
        "tool_calls": [{"tool": "shell", "command": "cat app.py"}],
        "final_message": VERDICT,
    })
    verdict = tmp_path / "verdict.json"
    async with open_rehearsal(script, tmp_path / "route") as session:
        ran = await realcli.run_cli(
            realcli.codex_reviewer_argv(
                session.route, worktree, _verdict_schema_file(tmp_path), verdict
            ),
            realcli.codex_env(session.route, child_home), worktree, b"Review the change.",
        )
        session.check_consumed()
        requests = session.requests

    assert ran.returncode == 0, ran.stderr.decode()
    assert _assert_verdict(verdict) == json.loads(VERDICT)
    events = ran.events()
    assert events[-1]["type"] == "turn.completed"
    scripted = [r for r in requests if r.outcome == "scripted"]
    assert [(r.invocation, r.turn) for r in scripted] == [(0, 0), (0, 1)]
    assert "VALUE = 1" in (scripted[1].tool_result or "")
    assert all("authorization" not in r.headers for r in requests)


async def _review_that_writes(
    tmp_path: Path, worktree: Path, child_home: Path, sandbox: str
) -> tuple[realcli.Ran, list[str | None], Path]:
    script = scenario({
        "role": "reviewer",
        "tool_calls": [{"tool": "shell", "command": "echo tampered > reviewer-wrote.txt"}],
        "final_message": VERDICT,
    })
    verdict = tmp_path / f"verdict-{sandbox}.json"
    async with open_rehearsal(script, tmp_path / f"route-{sandbox}") as session:
        argv = realcli.codex_reviewer_argv(
            session.route, worktree, _verdict_schema_file(tmp_path), verdict
        )
        argv[argv.index("read-only")] = sandbox
        ran = await realcli.run_cli(
            argv, realcli.codex_env(session.route, child_home), worktree, b"Review."
        )
        session.check_consumed()
        results = [r.tool_result for r in session.requests if r.outcome == "scripted"]
    return ran, results, verdict


async def test_codex_read_only_sandbox_refuses_a_scripted_write(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    ran, results, verdict = await _review_that_writes(tmp_path, worktree, child_home,
                                                      "read-only")
    assert ran.returncode == 0, ran.stderr.decode()
    assert not (worktree / "reviewer-wrote.txt").exists()
    assert "Read-only file system" in (results[-1] or "")
    assert _assert_verdict(verdict)["verdict"] == "REQUEST_CHANGES"
    assert git(worktree, "status", "--porcelain") == ""


async def test_codex_write_twin_succeeds_outside_the_read_only_sandbox(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    # Negative control: the same scripted command does write under workspace-write, so
    # the refusal above is the sandbox's doing, not a broken command.
    ran, results, verdict = await _review_that_writes(tmp_path, worktree, child_home,
                                                      "workspace-write")
    assert ran.returncode == 0, ran.stderr.decode()
    assert (worktree / "reviewer-wrote.txt").read_text() == "tampered\n"
    assert "exited with code 0" in (results[-1] or "")
    _assert_verdict(verdict)


def _plant_hooks(worktree: Path, markers: Path) -> None:
    def touch(name: str) -> list[dict[str, object]]:
        return [{"hooks": [{"type": "command", "command": f"touch {markers / name}"}]}]

    settings = {"hooks": {"SessionStart": touch("session-start"),
                          "PreToolUse": [{"matcher": "*", **touch("pre-tool-use")[0]}]}}
    (worktree / ".claude").mkdir()
    (worktree / ".claude" / "settings.json").write_text(json.dumps(settings))
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", "repository hooks")


async def _worker_with_hooks(
    tmp_path: Path, worktree: Path, child_home: Path, *, drop_setting_sources: bool
) -> tuple[realcli.Ran, Path]:
    markers = tmp_path / "markers"
    markers.mkdir()
    _plant_hooks(worktree, markers)
    script = scenario({
        "role": "worker",
        "tool_calls": [{"tool": "Write", "file_path": "out.txt", "content": "x\n"}],
        "final_message": "done",
    })
    argv = realcli.claude_worker_argv()
    if drop_setting_sources:
        at = argv.index("--setting-sources")
        del argv[at:at + 2]
    async with open_rehearsal(script, tmp_path / "route") as session:
        ran = await realcli.run_cli(
            argv, realcli.claude_env(session.route, child_home), worktree, b"Write out.txt."
        )
        session.check_consumed()
    assert ran.returncode == 0, ran.stderr.decode()
    assert (worktree / "out.txt").read_text() == "x\n"
    return ran, markers


async def test_repository_hooks_do_not_run_with_user_setting_sources(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    _, markers = await _worker_with_hooks(tmp_path, worktree, child_home,
                                          drop_setting_sources=False)
    assert sorted(p.name for p in markers.iterdir()) == []


async def test_repository_hooks_twin_runs_them_without_setting_sources(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    # Negative control: the same hooks fire when the flag is dropped, so their absence
    # above is the flag's doing.
    _, markers = await _worker_with_hooks(tmp_path, worktree, child_home,
                                          drop_setting_sources=True)
    assert sorted(p.name for p in markers.iterdir()) == ["pre-tool-use", "session-start"]


async def test_demo_scenario_runs_end_to_end_through_both_clis(
    tmp_path: Path, worktree: Path, child_home: Path
) -> None:
    script = load_scenario(DEMO_SCENARIO)
    schema = _verdict_schema_file(tmp_path)
    verdicts = []
    async with open_rehearsal(script, tmp_path / "route") as session:
        route = session.route
        for n, invocation in enumerate(script.invocations):
            if invocation.role == "reviewer":
                verdict = tmp_path / f"verdict-{n}.json"
                ran = await realcli.run_cli(
                    realcli.codex_reviewer_argv(route, worktree, schema, verdict),
                    realcli.codex_env(route, child_home), worktree, b"Review.",
                )
                verdicts.append(_assert_verdict(verdict)["verdict"])
            else:
                ran = await realcli.run_cli(
                    realcli.claude_worker_argv(), realcli.claude_env(route, child_home),
                    worktree, b"Work.",
                )
                assert result_event(ran)["is_error"] is False
            assert ran.returncode == 0, ran.stderr.decode()
        session.check_consumed()
        progress = session.progress()

    assert verdicts == ["REQUEST_CHANGES", "APPROVE"]
    assert [len(p.served_turns) for p in progress] == [2, 2, 2, 2]
    assert git(worktree, "status", "--porcelain").splitlines() == [
        "?? greeting.py", "?? test_greeting.py"]

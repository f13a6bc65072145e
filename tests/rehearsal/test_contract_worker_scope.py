"""The worker's file tools reach only its worktree (real Claude Code 2.1.332, SPEC P-2).

The profile scopes ``Read``/``Edit``/``Write``/``Glob``/``Grep`` with ``./**``. Scripted
calls outside the worktree are denied while the same calls inside succeed; the twin runs
the same script with the unscoped tool names and shows the outside write does land, so
the denial is the scoping's doing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.rehearsal import Scenario, open_rehearsal, parse_scenario
from providers import claude
from tests.rehearsal import realcli
from tests.support.git import add_linked_worktree, init_repo

pytestmark = pytest.mark.realcli
DENIED = "Permission for this tool use was denied"


def _script(base: Path) -> Scenario:
    return parse_scenario(
        json.dumps(
            {
                "schema": "factory.rehearsal-scenario/1",
                "invocations": [
                    {
                        "role": "worker",
                        "tool_calls": [
                            {
                                "tool": "Write",
                                "file_path": str(base / "abs-outside.txt"),
                                "content": "x\n",
                            },
                            {"tool": "Write", "file_path": "../rel-outside.txt", "content": "x\n"},
                            {"tool": "Read", "file_path": str(base / "secret.txt")},
                            {"tool": "Write", "file_path": "inside.txt", "content": "in\n"},
                            {"tool": "Read", "file_path": "app.py"},
                            {
                                "tool": "Edit",
                                "file_path": "app.py",
                                "old_string": "V = 1",
                                "new_string": "V = 2",
                            },
                            {
                                "tool": "Write",
                                "file_path": str(base / "wt" / "d" / "abs.txt"),
                                "content": "a\n",
                            },
                        ],
                        "final_message": "done",
                    }
                ],
            }
        ).encode()
    )


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text("TOPSECRET\n")
    add_linked_worktree(init_repo(tmp_path / "repo", {"app.py": "V = 1\n"}), tmp_path / "wt")
    return tmp_path


async def test_worker_file_tools_stop_at_the_worktree(base: Path) -> None:
    worktree = base / "wt"
    async with open_rehearsal(_script(base), base / "route") as session:
        await realcli.claude_profile().run_agent(
            role="worker",
            worktree=worktree,
            prompt="Work.",
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
        )
        session.check_consumed()
        results = [r.tool_result or "" for r in session.requests if r.outcome == "scripted"]
    assert all(DENIED in r for r in results[1:4]), results
    assert "TOPSECRET" not in "".join(results)
    assert not (base / "abs-outside.txt").exists() and not (base / "rel-outside.txt").exists()
    assert (worktree / "inside.txt").read_text() == "in\n"  # in-worktree twin
    assert (worktree / "app.py").read_text() == "V = 2\n"
    assert (worktree / "d" / "abs.txt").read_text() == "a\n"  # absolute, inside: allowed


async def test_twin_unscoped_tools_reach_outside_the_worktree(base: Path) -> None:
    worktree = base / "wt"
    async with open_rehearsal(_script(base), base / "route") as session:
        argv, env = realcli.claude_argv_env(session.route)
        at = argv.index("--allowedTools")
        assert argv[at + 1] == claude.ALLOWED_TOOLS
        argv[at + 1] = "Read,Edit,Write,Glob,Grep"
        ran = await realcli.run_cli(argv, env, worktree, b"Work.")
        results = [r.tool_result or "" for r in session.requests if r.outcome == "scripted"]
    assert ran.returncode == 0, ran.stderr.decode()
    assert (base / "abs-outside.txt").exists() and (base / "rel-outside.txt").exists()
    assert "TOPSECRET" in results[3]

"""A reviewer prompt equal to a Codex subcommand name (SPEC P-2), with the real pinned CLI.

``codex exec review`` would parse ``review`` as the ``review`` subcommand; the profile's
trailing ``-`` (prompt on stdin) must make it plain prompt text. The twin puts the same
word where a positional prompt goes and shows the trap is real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.provider_api import Verdict
from factory.rehearsal import open_rehearsal, parse_scenario
from tests.rehearsal import realcli
from tests.support.git import add_linked_worktree, init_repo

pytestmark = pytest.mark.realcli

VERDICT = '{"verdict":"APPROVE","summary":"fine"}'
ONE_REVIEW = parse_scenario(
    json.dumps(
        {
            "schema": "factory.rehearsal-scenario/1",
            "invocations": [{"role": "reviewer", "final_message": VERDICT}],
        }
    ).encode()
)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    return add_linked_worktree(init_repo(tmp_path / "repo", {"a.txt": "1\n"}), tmp_path / "wt")


@pytest.mark.parametrize("prompt", ["review", "resume"])
async def test_subcommand_named_prompt_reaches_the_model(
    tmp_path: Path, worktree: Path, prompt: str
) -> None:
    async with open_rehearsal(ONE_REVIEW, tmp_path / "route") as session:
        result = await realcli.codex_profile().run_reviewer(
            worktree=worktree,
            prompt=prompt,
            timeout_ms=realcli.TIMEOUT_MS,
            route=session.route,
            scratch=tmp_path,
        )
        session.check_consumed()
    assert result.verdict == Verdict(verdict="APPROVE", summary="fine")


async def test_twin_positional_review_is_parsed_as_the_subcommand(
    tmp_path: Path, worktree: Path
) -> None:
    async with open_rehearsal(ONE_REVIEW, tmp_path / "route") as session:
        argv, env, _ = realcli.codex_argv_env(session.route, worktree, tmp_path / "s")
        assert argv[-1] == "-"
        ran = await realcli.run_cli([*argv[:-1], "review"], env, worktree, b"")
        served = [r for r in session.requests if r.outcome == "scripted"]
    assert ran.returncode != 0 and served == []
    assert b"--uncommitted" in ran.stderr

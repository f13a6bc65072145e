"""``factory review lens --rehearsal demo``: the built-in name gives the lens the scripted
answer a batch's ``--review`` uses (finds nothing, says it is scripted) instead of the
agent-cycle scenario, whose answers are no lens result (they failed as
review-capture-failed). A file of yours named ``demo`` still wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.review.cli_helpers import edit_parser, review, run_lens

pytestmark = pytest.mark.realcli


def test_the_builtin_demo_name_answers_the_lens(repo: Path) -> None:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    ran = run_lens(repo, "--rehearsal", "demo", timeout_ms=25000)
    assert ran.code == 0, ran.stderr
    assert ran.doc["route"] == "rehearsal" and ran.doc["finding_ids"] == []
    assert "REHEARSAL" in ran.stderr


def test_a_file_of_yours_named_demo_is_used_as_given(repo: Path) -> None:
    """The twin: the same flag naming an existing file is that file (here an answer that
    is no reviewer result), so the built-in answer never hides a scenario you wrote."""
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    doc = {
        "schema": "factory.rehearsal-scenario/1",
        "invocations": [{"role": "reviewer", "tool_calls": [], "final_message": "I approve."}],
    }
    ignored = repo / "build"  # ignored (.gitignore): the candidate stays the frozen one
    ignored.mkdir()
    (ignored / "demo").write_text(json.dumps(doc))
    args = ("--cwd", str(repo), "--lens", "reliability", "--timeout-ms", "25000")
    ran = review("lens", *args, "--rehearsal", "demo", cwd=ignored)
    assert ran.code == 4 and ran.doc["error"]["code"] == "review-capture-failed"

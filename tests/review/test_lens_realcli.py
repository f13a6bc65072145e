"""The lens runner through the real pinned Codex on the rehearsal route (SPEC P-5): the
exact argv of the codex profile with the reviewer output schema, read-only sandbox, the
scripted answer captured with code-assigned ids. A rehearsal proves the control path,
nothing about model judgement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.review.conftest import edit_parser, review, reviewer_doc, run_lens

pytestmark = pytest.mark.realcli


def _scenario(tmp: Path, answer: dict[str, object], shell: str | None = None) -> Path:
    calls = [{"tool": "shell", "command": shell}] if shell else []
    doc = {
        "schema": "factory.rehearsal-scenario/1",
        "invocations": [
            {"role": "reviewer", "tool_calls": calls, "final_message": json.dumps(answer)}
        ],
    }
    path = tmp / "scenario.json"
    path.write_text(json.dumps(doc))
    return path


def test_real_codex_lens_on_the_rehearsal_route_is_captured(repo: Path, tmp_path: Path) -> None:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    answer = reviewer_doc(
        [
            {
                "location": "src/parser.py:2",
                "severity": "SUGGESTION",
                "claim": "name the sign flip in a comment",
                "proof_refs": ["src/parser.py line 2 changed from x to -x"],
                "evidence_class": None,
                "causal_disposition": None,
            }
        ]
    )
    answer["lens"] = "reliability"
    answer["binding"] = None
    scen = _scenario(tmp_path, answer, shell="git diff --stat")
    ran = run_lens(repo, "--rehearsal", str(scen), timeout_ms=25000)
    assert ran.code == 0, ran.stderr
    assert ran.doc["route"] == "rehearsal" and ran.doc["finding_ids"] == ["R3-001"]
    assert "REHEARSAL" in ran.stderr
    assert ran.doc["cli_version"].startswith("codex-cli")
    done = review(
        "finalize", "--cwd", str(repo), "--evidence", "-", input=b"rehearsal evidence\n", cwd=repo
    )
    assert done.code == 0 and done.doc["state"] == "approved"


def test_real_codex_lens_answer_outside_the_schema_is_preserved(repo: Path, tmp_path: Path) -> None:
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo)
    scen = _scenario(tmp_path, {"findings": [], "evidence": ["todo"]})
    ran = run_lens(repo, "--rehearsal", str(scen), timeout_ms=25000)
    assert ran.code == 4 and ran.doc["error"]["code"] == "review-capture-failed"
    assert Path(ran.doc["preserved"]).is_file()

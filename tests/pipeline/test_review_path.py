"""The review stage of ``factory publish`` with a real review transaction (issue 15): a
medium-risk candidate selects the reliability lens, so the gate asks the real ``factory
review validate --gate pre-pr``. Fake provider CLIs on the subscription route (the lens
answer is the fake Codex's canned bytes); a real bare remote over loopback HTTP and the
loopback forge emulation.

approve → tests pass → review approved → gate accepted → branch pushed → pull request,
the intent and the deep verification binding the review receipt the gate relied on; and
the negative controls that stop at the right stage with nothing changed: a lens that
found a blocker (the review escalated), a reviewer agent that rejected, no review at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factory.operator.verify import verify_operator_receipt
from factory.pipeline.deep import verify_chain
from tests.operator.helpers import World, receipt_json
from tests.operator.pty import Screen, authorize
from tests.pipeline.flow import evidence_for, held, publish
from tests.pipeline.helpers import FIXED, TEST_ARGV, TIMEOUT_MS, cli_env, make_world, publish_args
from tests.support.cli import run_factory
from tests.support.forge import LoopbackForge
from tests.support.git_remote import HttpRemote, remote_state

CLEAN = {"findings": [], "evidence": ["read the whole diff of src/app.py"]}
BLOCKER = {
    "findings": [
        {
            "location": "src/app.py:4",
            "severity": "BLOCKER",
            "claim": "double() is new and no test calls it",
            "proof_refs": ["check.py only calls answer()"],
            "evidence_class": "deterministic",
            "causal_disposition": "introduced",
        }
    ],
    "evidence": ["read the whole diff of src/app.py"],
}


def review(world: World, *args: str) -> dict[str, Any]:
    # --cwd before ARGS: finalize's --evidence-run takes everything after '--'
    proc = run_factory(
        ["review", args[0], "--cwd", str(world.wt), *args[1:]], env=cli_env(world), timeout=600
    )
    doc: dict[str, Any] = json.loads(proc.stdout)
    doc["exit"] = proc.returncode
    return doc


def reviewed(world: World, answer: dict[str, Any]) -> dict[str, Any]:
    """A review transaction on the world's worktree: start, the lens, finalize."""
    (world.fakes.bin / "canned.txt").write_text(json.dumps(answer))
    world.fakes.mode(claude="ok", codex="canned")
    started = review(world, "start")
    assert started["exit"] == 0 and [e["lens"] for e in started["lenses"]] == ["reliability"]
    lens = review(world, "lens", "--lens", "reliability", "--timeout-ms", TIMEOUT_MS)
    assert lens["exit"] == 0, lens
    return review(world, "finalize", "--evidence-run", "--", *TEST_ARGV)


def medium(tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote) -> World:
    return make_world(tmp_path, forge, http_remote, FIXED)


def test_an_approved_review_is_bound_by_the_intent_and_the_pull_request_is_opened(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = medium(tmp_path, forge, http_remote)
    done = reviewed(world, CLEAN)
    assert done["exit"] == 0 and done["state"] == "approved", done
    before = world.state()
    out = world.out("publish.json")
    screen = Screen(publish_args(world, out), cli_env(world))  # the operator at a pty
    assert authorize(screen) == 0, screen.text.decode(errors="replace")
    doc = receipt_json(out)
    assert doc["status"] == "executed" and set(doc["gate"]["stages"].values()) == {"completed"}
    bound = doc["intent"]["gate"]["review"]
    assert bound is not None and bound["terminal_state"] == "approved"
    assert bound["final_candidate_tree"] == doc["intent"]["candidate"]["candidate_tree"]
    assert bound["lineage_id"] == done["lineage"]
    assert evidence_for(world, "review_gate_allows")[0]["observation"]["value"] is True
    pub = doc["publication"]
    assert pub["push"] == "pushed" and pub["commit"] in remote_state(world.bare)["refs"]
    pulls = world.forge.state.calls("POST", "/pulls")
    assert len(pulls) == 1 and pulls[0].body["head"] == pub["branch"]
    after = world.state()
    assert all(after[key] == before[key] for key in ("status", "head", "index"))
    report = verify_chain(out, verify_operator_receipt(out))
    assert report["ok"] is True, report["chain"]


def test_a_review_that_escalated_holds_at_review_approved(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = medium(tmp_path, forge, http_remote)
    done = reviewed(world, BLOCKER)
    assert done["state"] == "correction_required", done
    assert review(world, "finalize", "--failed")["state"] == "escalated"
    before = world.state()
    result = publish(world)
    held(world, result, "review-approved", before)
    assert "review gate said escalated" in str(result.diagnostic)


def test_no_review_of_a_medium_risk_candidate_holds_at_review_approved(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = medium(tmp_path, forge, http_remote)
    before = world.state()
    result = publish(world)
    doc = held(world, result, "review-approved", before)
    assert doc["gate"]["stages"]["tests-pass"] == "completed"
    assert "review_gate_allows: false" in str(result.diagnostic)
    # negative control: the same candidate, once reviewed, is published
    assert reviewed(world, CLEAN)["state"] == "approved"
    again = publish(world, out=world.out("again.json"))
    assert again.exit_code == 0, again.diagnostic


def test_a_reviewer_agent_that_rejected_holds_at_agent_approved(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    # The reviewer asks for changes; the fake repair changes nothing, so the run ends
    # failed (repair-no-change) with the reviewer's REQUEST_CHANGES on record.
    verdict = json.dumps({"verdict": "REQUEST_CHANGES", "summary": "no test for double()"})
    world = make_world(
        tmp_path, forge, http_remote, FIXED, codex="canned", canned=verdict, expect=4
    )
    assert receipt_json(world.agent_receipt)["phases"][1]["outcome"] == "REQUEST_CHANGES"
    before = world.state()
    result = publish(world)
    held(world, result, "agent-approved", before)
    said = str(result.diagnostic)
    assert "agent_completed: false: observed" in said and "failed" in said
    assert evidence_for(world, "tests_exit_zero") == []  # the tests never ran on it

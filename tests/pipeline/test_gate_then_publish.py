"""``factory publish`` through the core flow with a scripted operator: the gate runs first,
stage by stage, and only an accepted candidate reaches the operator's prompts. Every
negative control stops at its stage with its reason and leaves the remote, the forge and
the worktree exactly as they were."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest

from factory.gate.service import Gate
from factory.gate.store import SqliteStore
from factory.operator import keys
from factory.operator.grant import Expected, GrantRefused
from factory.operator.intent import PublishIntent
from factory.operator.ledger import consume
from factory.operator.verify import verify_operator_receipt
from factory.pipeline.deep import verify_chain
from factory.pipeline.gatestep import GateStep
from tests.operator.helpers import ScriptedTerminal, World, receipt_json
from tests.pipeline.flow import SCENARIO, evidence_for, held, publish  # noqa: F401
from tests.pipeline.helpers import DOCS, WRONG, make_world, store
from tests.support.forge import LoopbackForge
from tests.support.git_remote import HttpRemote


@pytest.fixture
def low(tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote) -> World:
    return make_world(tmp_path, forge, http_remote, DOCS)


def test_a_low_risk_candidate_needs_no_lens_but_its_tests_and_is_published(low: World) -> None:
    result = publish(low)
    assert result.exit_code == 0, result.diagnostic
    doc = receipt_json(low.out())
    assert doc["status"] == "executed"
    gate, intent = doc["gate"], doc["intent"]
    assert gate["completed"] is True and set(gate["stages"].values()) == {"completed"}
    assert intent["gate"]["run"] == gate["run"] and intent["gate"]["head"] == gate["head"]
    assert intent["gate"]["candidate_tree"] == intent["candidate"]["candidate_tree"]
    assert intent["gate"]["review"] is None
    scope = doc["grant"]["signed"]["grant"]["scope"]
    assert (scope["gate_run"], scope["gate_head"]) == (gate["run"], gate["head"])
    # the tests ran (by factory, on the candidate tree); the review gate never had to
    tests = evidence_for(low, "tests_exit_zero")
    assert len(tests) == 1 and tests[0]["scope"]["value"] == intent["candidate"]["candidate_tree"]
    assert evidence_for(low, "review_gate_allows") == []
    assert evidence_for(low, "risk_selects_no_lens")[0]["observation"]["value"] == 0
    pub = doc["publication"]
    assert pub["push"] == "pushed" and pub["pull_request"] is not None
    assert len(low.forge.state.calls("POST", "/pulls")) == 1
    report = verify_chain(low.out(), verify_operator_receipt(low.out()))
    assert report["ok"] is True, report["chain"]
    assert report["chain"]["gate"]["runpack"]["properties"]["replay_agreement"]["status"] == "pass"


def test_failing_tests_hold_at_tests_pass(
    tmp_path: Path, forge: LoopbackForge, http_remote: HttpRemote
) -> None:
    world = make_world(tmp_path, forge, http_remote, WRONG)
    before = world.state()
    result = publish(world)
    doc = held(world, result, "tests-pass", before)
    assert doc["gate"]["stages"]["agent-approved"] == "completed"
    assert "tests_exit_zero: false: observed 1" in str(result.diagnostic)
    assert evidence_for(world, "risk_selects_no_lens") == []  # later stages not gathered


def test_a_worktree_edited_after_the_run_holds_at_agent_approved(low: World) -> None:
    (low.wt / "docs" / "notes.md").write_text("edited after the run\n")
    before = low.state()
    result = publish(low)
    held(low, result, "agent-approved", before)
    assert "candidate_in_worktree: false: observed false" in str(result.diagnostic)
    assert evidence_for(low, "tests_exit_zero") == []  # the tests never ran on it


def test_a_test_command_that_changes_the_tree_is_not_evidence(low: World) -> None:
    before_files = sorted(p.name for p in low.wt.iterdir())
    changer = [sys.executable, "-c", "open('made-by-tests.txt', 'w').write('x')"]
    result = publish(low, test=changer)
    assert result.exit_code == 3, result.diagnostic
    assert "observation-changed-what-it-measured" in str(result.diagnostic)
    (low.wt / "made-by-tests.txt").unlink()
    assert sorted(p.name for p in low.wt.iterdir()) == before_files


def test_a_held_run_resumes_and_completes_once_the_tests_pass(low: World) -> None:
    marker = low.tmp / "ci-ready"
    flaky = [
        sys.executable,
        "-c",
        f"import os, sys; sys.exit(0 if os.path.exists({str(marker)!r}) else 1)",
    ]
    first = publish(low, test=flaky)
    assert first.exit_code == 3
    run = receipt_json(low.out())["gate"]["run"]
    marker.write_text("")
    second = publish(low, test=flaky, out=low.out("again.json"))
    assert second.exit_code == 0, second.diagnostic
    doc = receipt_json(low.out("again.json"))
    assert doc["gate"]["run"] == run  # the same run, resumed
    assert len(evidence_for(low, "agent_completed")) == 1  # a completed stage is not redone
    assert len(evidence_for(low, "tests_exit_zero")) == 2


def test_no_test_command_is_refused_before_anything(low: World) -> None:
    from factory.errors import UsageError

    with pytest.raises(UsageError) as caught:
        publish(low, test=[])
    assert caught.value.code == "test-command-required"
    assert not low.out().exists() and not store(low).exists()


def test_a_stale_gate_head_at_acceptance_is_refused(low: World) -> None:
    before = low.state()

    def someone_accepts_first(step: GateStep) -> None:
        def accept_other(gate: Gate, run: Any) -> None:
            other = gate.derive(gate.load(run.run))
            assert gate.accept(gate.load(run.run), other).outcome == "committed"

        step.before_accept = accept_other

    result = publish(low, tweak=someone_accepts_first)
    assert result.exit_code == 4, result.diagnostic
    doc = receipt_json(low.out())
    assert doc["status"] == "refused" and doc["refusal"] == {"stage": "gate", "code": "gate-stale"}
    assert doc["grant"] is None and low.state() == before


def test_a_gate_head_that_moves_while_the_operator_types_is_refused(low: World) -> None:
    before = low.state()

    def accept_more() -> None:
        gate = Gate(SqliteStore(store(low)))
        run = gate.load(gate.store.runs()[0])
        assert gate.accept(run, gate.derive(run)).outcome == "committed"
        gate.store.close()

    result = publish(low, ScriptedTerminal(before_secret=accept_more))
    assert result.exit_code == 2, result.diagnostic
    doc = receipt_json(low.out())
    assert doc["refusal"] == {"stage": "grant", "code": "gate-head-stale"}
    assert doc["grant"] is None and not list(low.ledger.iterdir())
    assert low.state() == before


def test_a_replayed_grant_is_refused(low: World) -> None:
    assert publish(low).exit_code == 0
    doc = receipt_json(low.out())
    before = low.state()
    intent = PublishIntent.model_validate(doc["intent"])
    issued = dt.datetime.fromisoformat(doc["grant"]["signed"]["grant"]["issued_at"])
    with pytest.raises(GrantRefused) as caught:
        consume(
            doc["grant"]["signed"],
            Expected.of(intent),
            keys.load_public(low.public),
            low.ledger,
            lambda: issued + dt.timedelta(seconds=1),
        )
    assert caught.value.code == "grant-consumed"
    assert low.state() == before

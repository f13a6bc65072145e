"""``factory demo --pipeline``: the whole path on the rehearsal route with the real pinned
CLIs — agent cycle, a review transaction with scripted lenses, the sample's tests run by
factory, the gate accepted — ending on the operator's refusal of the rehearsal receipt,
with the chain so far verified (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_factory


@pytest.mark.realcli
def test_demo_pipeline_walks_to_the_operators_refusal(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    proc = run_factory(["demo", "--pipeline", "--dir", str(demo)], timeout=600)
    screen = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode() + screen
    # The review: a lineage approved on scripted lenses (the sample's fix is medium risk).
    assert "review     lineage review-" in screen and " approved (lenses: reliability" in screen
    # The gate: every stage of the rehearsal scenario completed and accepted.
    doc = json.loads((demo / "publish.operator.json").read_bytes())
    gate = doc["gate"]
    assert gate["scenario"] == "publish-candidate-rehearsal" and gate["completed"] is True
    assert set(gate["stages"].values()) == {"completed"}
    # The operator: refused at the intent, nothing spent, no publication.
    assert doc["status"] == "refused"
    assert doc["refusal"] == {"stage": "intent", "code": "rehearsal-receipt"}
    assert doc["grant"] is None and doc["publication"] is None and doc["intent"] is None
    assert "REFUSED at intent: rehearsal-receipt" in screen
    # The chain so far verifies from the outside, and a real run's next steps are shown.
    verify = run_factory(["operator", "verify", str(demo / "publish.operator.json"), "--deep"])
    assert verify.returncode == 0, verify.stdout.decode()
    assert json.loads(verify.stdout)["chain"]["ok"] is True
    assert "a real run, with your own logins, would next:" in screen
    assert "publish --receipt R.json" in screen
    # The runpack beside the receipt was exported, and the tests ran in the worktree
    # without leaving byte code behind (the tree is unchanged by the run).
    assert (demo / "publish.operator.json.gate" / "history.jsonl").is_file()
    assert not (demo / "worktree" / "__pycache__").exists()


def test_demo_pipeline_refuses_json(tmp_path: Path) -> None:
    proc = run_factory(["demo", "--pipeline", "--json", "--dir", str(tmp_path / "d")])
    assert proc.returncode == 2 and b"--json is not available with --pipeline" in proc.stderr
    assert not (tmp_path / "d").exists()

"""``factory operator verify``: an executed publication verifies offline; each kind of
tampering fails its own check (negative controls)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.documents.canonical import canonical_bytes
from factory.operator.publish_flow import PublishFlow
from factory.operator.session import operate
from factory.operator.verify import verify_operator_receipt
from tests.operator.helpers import REPO, ScriptedTerminal, World, make_keys
from tests.support.cli import run_factory


@pytest.fixture
def published(world: World) -> Path:
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    authority = world.authority()
    result = operate(world.out(), flow, lambda: (ScriptedTerminal(), authority))
    assert result.exit_code == 0, result.diagnostic
    return world.out()


def _reclose(path: Path, change: dict[str, object]) -> None:
    """Edit a field and re-close the receipt consistently (a careful forger)."""
    from factory.operator.receipt import OperatorReceipt, receipt_bytes

    value = json.loads(path.read_bytes())
    value.update(change)
    value.pop("revision")
    receipt = OperatorReceipt.model_validate(value).closed()
    path.write_bytes(receipt_bytes(receipt))


def test_an_executed_publication_verifies(world: World, published: Path) -> None:
    report = verify_operator_receipt(published, public_key=world.public)
    assert report["ok"], report
    assert report["grant"]["key_anchor"] == "given" and report["commit"]["ok"]
    proc = run_factory(["operator", "verify", str(published)])
    assert proc.returncode == 0 and b"consistency, not authorship" in proc.stderr


def test_another_public_key_fails_the_grant(world: World, published: Path, tmp_path: Path) -> None:
    _, other = make_keys(tmp_path / "other")
    report = verify_operator_receipt(published, public_key=other)
    assert not report["ok"] and not report["grant"]["ok"]
    proc = run_factory(["operator", "verify", str(published), "--public-key", str(other)])
    assert proc.returncode == 4 and b"grant" in proc.stderr


def test_an_edited_receipt_fails_its_revision(published: Path) -> None:
    data = published.read_bytes()
    published.write_bytes(data.replace(b'"executed"', b'"refused"', 1))
    report = verify_operator_receipt(published)
    assert not report["ok"] and not report["revision"]["ok"]


def test_a_reclosed_forgery_of_the_commit_fails(world: World, published: Path) -> None:
    value = json.loads(published.read_bytes())
    publication = {**value["publication"], "commit": "f" * 40}
    _reclose(published, {"publication": publication})
    report = verify_operator_receipt(published, public_key=world.public)
    assert report["revision"]["ok"] and not report["commit"]["ok"] and not report["ok"]


def test_a_reclosed_forgery_of_the_intent_fails_the_grant(world: World, published: Path) -> None:
    value = json.loads(published.read_bytes())
    intent = {**value["intent"], "repository": "octo/other"}
    _reclose(published, {"intent": intent})
    report = verify_operator_receipt(published, public_key=world.public)
    assert not report["intent"]["ok"] and not report["grant"]["ok"] and not report["ok"]


def test_a_missing_or_edited_ledger_entry_fails(world: World, published: Path) -> None:
    entry = next(world.ledger.iterdir())
    entry.write_bytes(canonical_bytes({"x": 1}) + b"\n")
    assert verify_operator_receipt(published)["ledger"]["problem"] == "entry-missing"
    entry.unlink()
    assert not verify_operator_receipt(published)["ok"]


def test_an_edited_agent_receipt_fails(world: World, published: Path) -> None:
    world.agent_receipt.write_bytes(world.agent_receipt.read_bytes() + b" ")
    report = verify_operator_receipt(published, public_key=world.public)
    assert report["agent_receipt"]["problem"] == "bytes-changed" and not report["ok"]


def test_a_refused_receipt_verifies_as_a_refusal(world: World) -> None:
    flow = PublishFlow(world.client(), REPO, world.agent_receipt, "origin", None)
    authority = world.authority()
    bad = ScriptedTerminal(revision=lambda shown: "nope")
    assert operate(world.out("r.json"), flow, lambda: (bad, authority)).exit_code == 2
    report = verify_operator_receipt(world.out("r.json"))
    assert report["ok"] and report["status"] == "refused"

"""The pure publish intent builder (SPEC O-2): every refusal by name, the injected
precondition seam, and a revision that covers every field."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from factory.agent.verify import load_receipt
from factory.operator.intent import (
    RECEIPT_NOT_VERIFIED,
    IntentRefused,
    RemoteRef,
    intent_revision_ok,
)
from factory.operator.publication import PublishInputs, publish_intent
from tests.operator.helpers import REPO, World


def _inputs(world: World) -> PublishInputs:
    receipt, _ = load_receipt(world.agent_receipt)
    cand = receipt.final_candidate()
    assert cand is not None
    return PublishInputs(
        receipt=receipt,
        receipt_path=str(world.agent_receipt),
        receipt_sha256="0" * 64,
        verified=True,
        live_identity=cand.identity,
        forge=world.forge.url,
        repository=REPO,
        issue=12,
        remote=RemoteRef(name="origin", url="https://example.invalid/r.git"),
        base_branch="main",
        author_name="Ada",
        author_email="ada@factory.invalid",
    )


def _code(inputs: PublishInputs, *pre: object) -> str:
    with pytest.raises(IntentRefused) as exc:
        publish_intent(inputs, pre)  # type: ignore[arg-type]
    return exc.value.code


def test_intent_shape_and_branch(world: World) -> None:
    intent = publish_intent(_inputs(world))
    assert intent.operations == ["commit", "push-with-lease", "open-pull-request"]
    assert intent.effect == "NONE" and intent_revision_ok(intent)
    assert intent.branch == f"factory/issue-12-{intent.intent_revision[7:19]}"
    assert "Closes #12" in intent.pull_request.body
    bare = publish_intent(dataclasses.replace(_inputs(world), issue=None))
    assert bare.branch == f"factory/{bare.intent_revision[7:19]}"
    assert "Closes" not in bare.pull_request.body


def test_every_input_moves_the_revision(world: World) -> None:
    base = _inputs(world)
    first = publish_intent(base).intent_revision
    for change in (
        {"base_branch": "develop"},
        {"author_email": "eve@factory.invalid"},
        {"remote": RemoteRef(name="origin", url="https://example.invalid/other.git")},
        {"receipt_sha256": "1" * 64},
        {"issue": 13},
    ):
        assert publish_intent(dataclasses.replace(base, **change)).intent_revision != first


def test_refusals_by_name(world: World) -> None:
    base = _inputs(world)
    receipt = base.receipt
    assert (
        _code(dataclasses.replace(base, receipt=receipt.model_copy(update={"route": "rehearsal"})))
        == "rehearsal-receipt"
    )
    rejected = receipt.model_copy(update={"status": "rejected", "verdict": "REQUEST_CHANGES"})
    assert _code(dataclasses.replace(base, receipt=rejected)) == "receipt-not-completed"
    assert _code(dataclasses.replace(base, verified=False)) == "receipt-not-verified"
    assert _code(dataclasses.replace(base, live_identity=None)) == "candidate-changed"
    assert (
        _code(dataclasses.replace(base, live_identity="sha256:" + "9" * 64)) == "candidate-changed"
    )
    empty = receipt.model_copy(
        update={"candidate": receipt.candidate.model_copy(update={"initial": None})}
    )
    assert _code(dataclasses.replace(base, receipt=empty)) == "candidate-missing"


def test_conversions_differ_is_refused(world: World) -> None:
    # ``conversions_differ`` (per candidate record, from the raw-bytes snapshot): true is
    # refused, false accepted.
    base = _inputs(world)
    receipt = base.receipt
    assert receipt.candidate.initial is not None
    for flag, refused in ((True, True), (False, False)):
        cand = receipt.candidate.initial.model_copy(update={"conversions_differ": flag})
        changed = receipt.model_copy(
            update={"candidate": receipt.candidate.model_copy(update={"initial": cand})}
        )
        inputs = dataclasses.replace(base, receipt=changed)
        if refused:
            assert _code(inputs) == "candidate-conversions-differ"
        else:
            publish_intent(inputs)


def test_an_injected_precondition_refuses(world: World) -> None:
    seen: list[PublishInputs] = []

    # The pipeline's gate will raise its own ``gate-not-accepted``; a code defined here would
    # leak into the registry snapshot, so the stand-in raises an existing intent code.
    def gate(inputs: PublishInputs) -> None:
        seen.append(inputs)
        raise RECEIPT_NOT_VERIFIED("stand-in: no accepted gate run for this tree")

    assert _code(_inputs(world), gate) == "receipt-not-verified"
    assert len(seen) == 1
    # receipt refusals come first: a rehearsal never reaches the gate
    base = _inputs(world)
    rehearsal = dataclasses.replace(
        base, receipt=base.receipt.model_copy(update={"route": "rehearsal"})
    )
    assert _code(rehearsal, gate) == "rehearsal-receipt" and len(seen) == 1


def test_path_is_kept_absolute(world: World) -> None:
    assert Path(publish_intent(_inputs(world)).receipt.path).is_absolute()

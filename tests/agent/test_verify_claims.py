"""``receipt verify`` reads the receipt's claims from the evidence it binds too (issue 24
§5): a forgery that recomputes the revision is self-consistent by construction, but it
cannot also rewrite the hash-bound verdict files or the candidates' bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.agent.evidence import resolve_evidence_path
from factory.agent.receipt import AgentReceipt, receipt_bytes
from factory.agent.verify import verify_json as verify
from tests.agent.fakes import Step, write
from tests.agent.helpers import run
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


def _on_disk(layout: Layout) -> AgentReceipt:
    return AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))


def _reclosed(layout: Layout, receipt: AgentReceipt) -> None:
    layout.receipt.write_bytes(receipt_bytes(receipt.closed()))


async def test_a_relabelled_approve_with_a_recomputed_revision_does_not_verify(
    layout: Layout,
) -> None:
    repair = Step(effect=write("tests/test_app.py", "def test_add():\n    assert True\n"))
    ran = await run(layout, [Step(effect=FIX), repair], [Step(verdict="REQUEST_CHANGES")] * 2)
    assert ran.outcome.receipt.status == "rejected", ran.outcome.receipt.error
    r = _on_disk(layout)
    phases = [
        p.model_copy(update={"verdict": "APPROVE", "outcome": "APPROVE"})
        if p.phase == "final_review"
        else p
        for p in r.phases
    ]
    forged = r.model_copy(
        update={"phases": phases, "verdict": "APPROVE", "status": "completed", "exit_code": 0}
    )
    _reclosed(layout, forged)
    report = verify(layout.receipt)
    assert report["revision"]["ok"] is True and report["ok"] is False
    assert "final_review-verdict-does-not-match-its-verdict-file" in report["consistency_problems"]
    # twin: the same receipt re-closed without the relabel still verifies
    _reclosed(layout, r)
    assert verify(layout.receipt)["ok"] is True


async def test_a_candidate_on_another_base_does_not_verify(layout: Layout) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    r = _on_disk(layout)
    assert r.base is not None and verify(layout.receipt)["ok"] is True  # the twin
    forged = r.model_copy(update={"base": r.base.model_copy(update={"tree": "f" * 40})})
    _reclosed(layout, forged)
    report = verify(layout.receipt)
    assert report["ok"] is False
    assert "initial-candidate-base-is-not-the-base" in report["consistency_problems"]


async def test_a_size_mismatch_is_reported_without_hashing(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    r = _on_disk(layout)
    ref = r.phases[0].evidence[0]
    target = resolve_evidence_path(ref, layout.receipt)
    with open(target, "ab") as f:  # grown: the size alone tells
        f.write(b"x")

    import factory.agent.verify as module

    real = module.digest_file  # type: ignore[attr-defined]

    def guarded(path: Path, **kw: Any) -> tuple[int, str]:
        assert Path(path) != target, "a file of the wrong size was hashed"
        return real(path, **kw)

    monkeypatch.setattr(module, "digest_file", guarded)
    report = verify(layout.receipt)
    problem = next(e["problem"] for e in report["evidence"] if e["role"] == ref.role)
    assert problem == "size-mismatch"

"""The gate's reason in a batch report is data: hostile text from a held gate reaches the
report as the characters it was (JSON escapes what it must), never pre-escaped display
text, and a long reason is cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factory.batch import gating
from factory.operator.session import Held
from factory.pipeline import gatestep


class _Step:
    run, head = "publish-x", "h" * 40

    def __init__(self, *_: Any) -> None:
        pass

    def __call__(self) -> None:
        raise Held(self.reason)

    reason = ""


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> type[_Step]:
    monkeypatch.setattr("factory.agent.verify.load_receipt", lambda _p: (None, b""))
    monkeypatch.setattr(gatestep, "run_params", lambda *_a: None)
    monkeypatch.setattr(gatestep, "GateStep", _Step)
    return _Step


def _why(tmp_path: Path) -> str:
    got = gating.gate_task(
        tmp_path / "r.json", ["true"], tmp_path / "g", rehearsal=True, export_to=tmp_path
    )
    assert got.state == "held" and got.run == "publish-x"
    assert got.why is not None
    return got.why


def test_a_hostile_reason_is_kept_as_data(tmp_path: Path, stubbed: type[_Step]) -> None:
    stubbed.reason = "review-approved: \x1b[31mred\u202e"
    why = _why(tmp_path)
    assert why == stubbed.reason  # not "\\x1b[31m…": a screen escapes it when it shows it
    assert "\\u001b" in json.dumps(why)


def test_a_long_reason_is_cut(tmp_path: Path, stubbed: type[_Step]) -> None:
    stubbed.reason = "x" * 2000
    why = _why(tmp_path)
    assert len(why) == 500 and why.endswith("\u2026")
    stubbed.reason = "x" * 500  # twin: at the limit, whole
    assert _why(tmp_path) == "x" * 500

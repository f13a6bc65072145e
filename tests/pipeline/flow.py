"""One `factory publish` in-process with a scripted operator, and the checks of a gate stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factory.gate.scenario import load_builtin
from factory.gate.service import Gate
from factory.gate.store import SqliteStore
from factory.operator.session import Result, operate
from factory.pipeline.publish import pipeline_flow
from tests.operator.helpers import REPO, ScriptedTerminal, World, receipt_json
from tests.pipeline.helpers import store

SCENARIO = load_builtin("publish-candidate")


def publish(
    world: World,
    terminal: ScriptedTerminal | None = None,
    out: Path | None = None,
    test: list[str] | None = None,
    tweak: Any = None,
    **kw: Any,
) -> Result:
    """One ``factory publish`` in-process; ``tweak(step)`` may adjust the gate step."""
    from tests.pipeline.helpers import TEST_ARGV

    target = out or world.out()
    flow, step = pipeline_flow(
        world.client(),
        REPO,
        world.agent_receipt,
        "origin",
        out=target,
        scenario=SCENARIO,
        store=store(world),
        test_argv=TEST_ARGV if test is None else test,
        **kw,
    )
    if tweak is not None:
        tweak(step)
    term = terminal or ScriptedTerminal()
    return operate(target, flow, lambda: (term, world.authority()))


def evidence_for(world: World, condition: str) -> list[dict[str, Any]]:
    gate = Gate(SqliteStore(store(world)))
    try:
        runs = gate.store.runs()
        out = []
        for run in runs:
            for rec in gate.store.evidence(run):
                doc = json.loads(rec.payload)
                if doc["condition"] == condition:
                    out.append(doc)
        return out
    finally:
        gate.store.close()


def held(world: World, result: Result, stage: str, before: dict[str, Any]) -> dict[str, Any]:
    """The common shape of a gate stop: exit 3, held, nothing spent, nothing changed."""
    assert result.exit_code == 3, result.diagnostic
    doc = receipt_json(world.out())
    assert doc["status"] == "held" and doc["grant"] is None and doc["intent"] is None
    assert doc["refusal"] == {"stage": "gate", "code": "gate-held"}
    assert doc["gate"]["stages"][stage] != "completed"
    assert result.diagnostic is not None and f"at stage {stage}." in result.diagnostic
    assert world.state() == before
    assert world.forge.state.calls("POST", "/pulls") == []
    assert not world.ledger.exists() or not list(world.ledger.iterdir())
    return doc

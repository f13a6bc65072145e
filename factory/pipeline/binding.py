"""Find and bind the decision-gate run a publication stands on (SPEC X-1).

:class:`StoreGate` is the operator's :class:`~factory.operator.gateref.GateLookup` over a
SQLite gate store. :meth:`StoreGate.find` looks, without writing anything (a missing store
file is not created), for a run of the required scenario — the built-in
``publish-candidate`` or the one the user names, compared by spec hash — whose
``candidate_tree`` parameter is the receipt's candidate tree and whose accepted head
completed the scenario. It re-validates every run it considers (the gate's own load), and
never guesses: two accepted runs for one candidate are ambiguous unless one is named.

The review receipt a publication relied on is the one carried by the ``review-gate``
evidence that an accepted evaluation counted as true: its artefact is the review check's
typed result (``factory.review-gate-result/1``), whose ``context.receipt`` is the review
receipt.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.documents.canonical import digest, sha256_hex
from factory.errors import FactoryError
from factory.gate.runpack import MANIFEST, export
from factory.gate.scenario import Scenario
from factory.gate.service import Gate, LoadedRun
from factory.gate.store import SqliteStore
from factory.operator.gateref import GateFinding, GateRef, GateRun, ReviewRef
from factory.operator.publish_flow import GATE_HEAD_STALE
from factory.operator.receipt import GateExport, GateRecord

REVIEW_RECEIPT_TAG = "factory.review-receipt/1"
REVIEW_PRODUCER = "factory:review-gate"
REVIEW_ARTEFACT = "review-gate-result"


def open_gate(store: Path, clock: Callable[[], int] = time.time_ns) -> Gate | None:
    """The gate over an existing store file (``None`` when there is none: never created)."""
    if not store.is_file():
        return None
    return Gate(SqliteStore(store), clock=clock)


def stage_states(run: LoadedRun) -> dict[str, str]:
    return {sid: run.state.stage_state(run.scenario, sid) for sid in run.scenario.order}


def _same_file(a: str | None, b: Path) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)


def review_of(gate: Gate, run: LoadedRun) -> ReviewRef | None:
    """The review receipt that an accepted evaluation of ``run`` counted as true."""
    store = gate.store
    evidence = {e.id: e for e in store.evidence(run.run)}
    chosen = None
    for entry in store.entries(run.run)[1:]:
        raw = store.evaluation(run.run, str(entry.body["evaluation"]))
        record = json.loads(raw) if raw is not None else {"conditions": []}
        for cond in record["conditions"]:
            found = evidence.get(cond["record"]) if cond["result"] == "true" else None
            if found is not None and found.producer == REVIEW_PRODUCER:
                chosen = found
    if chosen is None:
        return None
    doc = json.loads(chosen.payload)
    for artefact in doc.get("artefacts", []):
        blob = (
            store.blob(str(artefact.get("sha256")))
            if artefact.get("role") == REVIEW_ARTEFACT
            else None
        )
        receipt = json.loads(blob).get("context", {}).get("receipt") if blob else None
        if isinstance(receipt, dict):
            return ReviewRef(
                lineage_id=str(receipt.get("lineage_id")),
                generation=int(receipt.get("generation", 0)),
                terminal_state=str(receipt.get("terminal_state")),
                final_candidate_tree=str(receipt.get("final_candidate_tree")),
                digest=digest(REVIEW_RECEIPT_TAG, receipt),
                evidence=chosen.id,
            )
    return None


def _facts(run: LoadedRun, store: Path) -> GateRun:
    return GateRun(
        store=os.fspath(store),
        run=run.run,
        scenario=run.scenario.id,
        spec_hash=run.scenario.spec_hash,
        head=run.state.head,
        seq=run.state.seq,
        completed=run.state.scenario_completed,
    )


def gate_ref(gate: Gate, run: LoadedRun, store: Path) -> GateRef:
    """The intent's binding of ``run`` as it stands now."""
    return GateRef(
        **dict(_facts(run, store)),
        candidate_tree=str(run.state.params.get("candidate_tree")),
        review=review_of(gate, run),
    )


def gate_record(gate: Gate, run: LoadedRun, store: Path, folder: Path | None) -> GateRecord:
    """The operator receipt's record of ``run``; exports its runpack into the new
    ``folder`` first when one is given (named relative to OUT's folder, beside it)."""
    exported = None
    if folder is not None:
        manifest = export(gate, run, folder)
        exported = GateExport(
            path=folder.name,
            root_hash=str(manifest["root_hash"]),
            manifest_sha256=sha256_hex((folder / MANIFEST).read_bytes()),
        )
    return GateRecord(**dict(_facts(run, store)), stages=stage_states(run), export=exported)


def first_pending(run: LoadedRun) -> str | None:
    """The first stage (in topological order) that has not completed."""
    states = stage_states(run)
    return next((sid for sid in run.scenario.order if states[sid] != "completed"), None)


@dataclass
class StoreGate:
    """:class:`~factory.operator.gateref.GateLookup` over one SQLite gate store."""

    store: Path
    scenario: Scenario
    run: str | None = None  # a run the user named; else runs are discovered
    clock: Callable[[], int] = time.time_ns

    def _candidates(self, gate: Gate) -> list[str]:
        return [self.run] if self.run is not None else gate.store.runs()

    def find(self, agent_receipt: Path, receipt: Any) -> GateFinding:
        cand = receipt.final_candidate()
        if cand is None:
            return GateFinding(None, "the agent receipt binds no candidate")
        tree = cand.body.candidate_tree
        gate = open_gate(self.store, self.clock)
        if gate is None:
            return GateFinding(None, f"there is no gate store at {self.store}")
        try:
            return self._find(gate, agent_receipt, tree)
        finally:
            gate.store.close()

    def _find(self, gate: Gate, agent_receipt: Path, tree: str) -> GateFinding:
        accepted: list[LoadedRun] = []
        notes: list[str] = []
        for run_id in self._candidates(gate):
            try:
                run = gate.load(run_id)
            except FactoryError as exc:
                notes.append(f"gate run {run_id} cannot be used ({exc.code})")
                continue
            params = run.state.params
            if run.scenario.spec_hash != self.scenario.spec_hash:
                if self.run is not None:
                    notes.append(
                        f"gate run {run_id} is a run of scenario {run.scenario.id} "
                        f"({run.scenario.spec_hash}), not of {self.scenario.id} "
                        f"({self.scenario.spec_hash})"
                    )
                continue
            if params.get("candidate_tree") != tree:
                notes.append(f"gate run {run_id} is for another candidate tree")
                continue
            if "receipt" in params and not _same_file(params["receipt"], agent_receipt):
                notes.append(f"gate run {run_id} is for another agent receipt")
                continue
            if not run.state.scenario_completed:
                notes.append(f"gate run {run_id} is held at stage {first_pending(run)}")
                continue
            accepted.append(run)
        if len(accepted) > 1:
            names = ", ".join(r.run for r in accepted)
            return GateFinding(None, f"several accepted gate runs ({names}); name one")
        if not accepted:
            why = "; ".join(notes) or (
                f"no run of scenario {self.scenario.id} for this candidate in {self.store}"
            )
            return GateFinding(None, why)
        return GateFinding(gate_ref(gate, accepted[0], self.store))

    def bind(self, ref: GateRef, folder: Path | None) -> GateRecord:
        gate = open_gate(self.store, self.clock)
        assert gate is not None  # find() found the run in it
        try:
            run = gate.load(ref.run)
            if run.state.head != ref.head:
                raise GATE_HEAD_STALE(
                    f"gate run {ref.run} moved on while the publication was being prepared"
                )
            return gate_record(gate, run, self.store, folder)
        finally:
            gate.store.close()

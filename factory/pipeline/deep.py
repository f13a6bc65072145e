"""``factory operator verify OUT --deep``: the whole chain, offline (SPEC X-1).

On top of the operator receipt's own checks (revision, grant, ledger, the bound agent
receipt's bytes, evidence and revision, the commit id), this checks that the links
between the documents hold:

* **agent receipt → intent**: the agent receipt's final candidate is the one the intent
  names (identity, base commit, candidate tree);
* **gate runpack**: the folder beside OUT that the receipt's ``gate.export`` names is
  re-hashed and every accepted evaluation replayed (:func:`factory.gate.verify.verify`:
  record integrity, source authenticity, freshness, replay agreement — none may fail);
  its manifest bytes and root hash are the recorded ones; its history, replayed under its
  own scenario, ends at the head the receipt and the intent bound, completed when the
  intent says so, for the candidate tree the intent publishes (the run's
  ``candidate_tree`` parameter);
* **review receipt**: when the intent names one, the runpack holds the review gate's
  output that carried it (by the evidence id the intent names), and its receipt hashes to
  the digest the intent bound and approved the candidate tree that is published.

Each problem is named; ``ok`` only when there are none. What cannot be proved offline is
said in ``residuals``: the live worktree and the forge are not consulted.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from factory.documents.canonical import digest, sha256_hex
from factory.errors import FactoryError
from factory.gate import state as history
from factory.gate.runpack import MANIFEST
from factory.gate.scenario import load_bytes
from factory.gate.verify import verify as verify_runpack
from factory.operator.gateref import GateRef
from factory.operator.intent import PublishIntent
from factory.operator.receipt import GateRecord, OperatorReceipt
from factory.operator.verify import load
from factory.pipeline.binding import REVIEW_ARTEFACT, REVIEW_RECEIPT_TAG

CHAIN_SCHEMA = "factory.operator-chain-verification/1"
RESIDUALS = (
    "Offline: the live worktree, the remote and the forge are not consulted.",
    "The runpack is unsigned; it shows consistency, not authorship.",
)


def _read(folder: Path, name: str) -> bytes:
    with open(folder / name, "rb") as handle:
        return handle.read()


def _agent_link(receipt: OperatorReceipt, problems: list[str]) -> None:
    from factory.agent.verify import load_receipt

    intent = receipt.intent
    if not isinstance(intent, PublishIntent):
        return
    try:
        agent, _ = load_receipt(Path(intent.receipt.path))
    except FactoryError as exc:
        problems.append(f"the agent receipt cannot be read ({exc.code})")
        return
    cand = agent.final_candidate()
    if cand is None or (
        cand.identity,
        cand.body.base_commit,
        cand.body.candidate_tree,
    ) != (intent.candidate.identity, intent.candidate.base_commit, intent.candidate.candidate_tree):
        problems.append("the agent receipt's final candidate is not the intent's")


def _history(folder: Path) -> history.RunState:
    names = [n for n in os.listdir(folder) if n.startswith("scenario.")]
    scenario = load_bytes(_read(folder, names[0]), names[0].split(".", 1)[1])
    entries = []
    for line in _read(folder, "history.jsonl").splitlines():
        raw = json.loads(line)
        entries.append(history.Entry(raw["run"], raw["seq"], raw["prev"], raw["body"], raw["hash"]))
    return history.replay(scenario, entries)


def _review(folder: Path, gate: GateRef, tree: str, problems: list[str]) -> None:
    review = gate.review
    if review is None:
        return
    index = [json.loads(line) for line in _read(folder, "evidence.jsonl").splitlines()]
    row = next((r for r in index if r["id"] == review.evidence), None)
    if row is None:
        problems.append("the review gate evidence the intent names is not in the runpack")
        return
    found = None
    for artefact in json.loads(_read(folder, f"evidence/{row['sha256']}")).get("artefacts", []):
        if artefact.get("role") == REVIEW_ARTEFACT:
            doc = json.loads(_read(folder, f"blobs/{artefact['sha256']}"))
            found = doc.get("context", {}).get("receipt")
    if not isinstance(found, dict) or digest(REVIEW_RECEIPT_TAG, found) != review.digest:
        problems.append("the runpack holds no review receipt with the digest the intent bound")
    elif found.get("final_candidate_tree") != tree or found.get("terminal_state") != "approved":
        problems.append("the bound review receipt did not approve the published candidate tree")


def _gate_link(out: Path, receipt: OperatorReceipt, problems: list[str]) -> dict[str, Any]:
    record: GateRecord | None = receipt.gate
    intent = receipt.intent
    bound = intent.gate if isinstance(intent, PublishIntent) else None
    if record is None or record.export is None:
        if receipt.command == "publish":
            problems.append("the receipt binds no exported gate run")
        return {"present": False}
    folder = Path(os.path.abspath(out)).parent / record.export.path
    report = verify_runpack(folder, now=time.time_ns())
    for name, prop in report["properties"].items():
        if prop["status"] == "fail":
            problems.append(f"runpack {name}: " + "; ".join(prop["problems"][:3]))
    try:
        manifest = _read(folder, MANIFEST)
        state = _history(folder)
    except (OSError, ValueError, KeyError, IndexError, FactoryError):
        problems.append("the runpack's manifest or history cannot be read")
        return {"present": True, "runpack": report}
    if sha256_hex(manifest) != record.export.manifest_sha256:
        problems.append("the runpack manifest is not the one the receipt recorded")
    if json.loads(manifest).get("root_hash") != record.export.root_hash:
        problems.append("the runpack root hash is not the one the receipt recorded")
    if (state.run, state.head, state.seq) != (record.run, record.head, record.seq):
        problems.append("the runpack's replayed head is not the receipt's gate head")
    if bound is not None:
        tree = intent.candidate.candidate_tree if isinstance(intent, PublishIntent) else ""
        if (bound.run, bound.head, bound.spec_hash) != (state.run, state.head, state.spec_hash):
            problems.append("the intent's gate run, head or scenario is not the runpack's")
        if bound.completed and not state.scenario_completed:
            problems.append("the intent says the gate completed; the replayed history does not")
        if state.params.get("candidate_tree") != tree:
            problems.append("the gate run is for another candidate tree than the published one")
        _review(folder, bound, tree, problems)
    return {"present": True, "runpack": report}


def verify_chain(out: Path, report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (from :func:`factory.operator.verify.verify_operator_receipt`) with the
    ``chain`` section added and ``ok`` narrowed by it."""
    receipt, _ = load(out)
    problems: list[str] = []
    if not report["agent_receipt"]["ok"]:
        problems.append("the agent receipt does not re-verify")
    _agent_link(receipt, problems)
    gate = _gate_link(out, receipt, problems)
    chain = {
        "schema": CHAIN_SCHEMA,
        "gate": gate,
        "problems": problems,
        "residuals": list(RESIDUALS),
        "ok": not problems,
    }
    return {**report, "chain": chain, "ok": bool(report["ok"]) and not problems}

"""The one registry of factory's published documents: schema id → model → JSON Schema.

Every document factory writes for someone else to read (a receipt, a report, a record in
a store, a line of progress) is a strict pydantic model with a ``Literal`` schema id, and
each is named here once: its short name, schema id, a one-line summary and the model(s)
(``module:Class``; several when the document has more than one shape). A test scans
``factory/`` and ``providers/`` for every ``Literal["factory.…/n"]`` and fails when one is
missing here, so no document escapes the registry.

The models are named as strings and imported only by :func:`model_of`/:func:`generate`:
this module is stdlib only and sits in the identity layer, while the models live in the
subsystems that own them (the registry names them, it does not import them upward).
Each document's JSON Schema ships as ``schemas/NAME.json`` beside this module, generated
from its model in pydantic's *validation* mode (what factory accepts when it reads the
document back, so every document it writes validates against it; fields that have a
default are optional there). ``factory schema NAME`` prints the shipped file without
importing any model; ``tests/cli/test_schema_cmd.py`` regenerates every file and fails on
any difference (``FACTORY_UPDATE_GOLDEN=1`` rewrites them, then review the diff).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import import_module, resources
from typing import Any

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class Document:
    """One published document: its short ``name``, schema id, a one-line summary, and the
    model(s) as ``module:Class``."""

    name: str
    schema_id: str
    summary: str
    models: tuple[str, ...]


def _doc(schema_id: str, summary: str, *models: str) -> Document:
    name = schema_id.removeprefix("factory.").partition("/")[0]
    return Document(name, schema_id, summary, models)


REGISTRY: tuple[Document, ...] = (
    # agent runs and their receipts
    _doc("factory.agent-receipt/1", "what `factory agent` did and observed (receipt.json)",
         "factory.agent.receipt:AgentReceipt"),
    _doc("factory.candidate-identity/1", "the identity of a candidate change inside a receipt",
         "factory.agent.receipt:CandidateBody"),
    _doc("factory.receipt-verification/1", "the result of `factory receipt verify`",
         "factory.agent.verification:ReceiptVerification"),
    _doc("factory.agent-progress/1", "one line of `factory agent --progress jsonl`",
         "factory.agent.progress:ProgressRecord"),
    _doc("factory.receipt-application/1", "what `factory receipt apply` took into a checkout",
         "factory.agent.receipt_apply:ReceiptApplication"),
    _doc("factory.worktree-removal/1", "what `factory worktree remove` removed",
         "factory.agent.worktree_remove:WorktreeRemoval"),
    _doc("factory.demo-report/1", "the summary `factory demo` prints",
         "factory.demo.report:DemoReport"),
    _doc("factory.doctor/1", "the report of `factory doctor`", "providers.doctor:DoctorReport"),
    # batches and the run registry
    _doc("factory.batch-tasks/1", "a task file for `factory batch`",
         "factory.batch.tasks:TasksFile"),
    _doc("factory.batch-report/1", "the report of `factory batch`",
         "factory.batch.report:BatchReport"),
    _doc("factory.agent-child-request/1",
         "what a batch or a worker hands the child that runs one agent attempt",
         "factory.batch.child_request:AgentChildRequest"),
    _doc("factory.run-record/1", "one run in factory's run registry",
         "factory.runs.registry:RunRecord"),
    _doc("factory.runs/1", "the overview `factory runs` prints",
         "factory.runs.overview:RunsOverview"),
    _doc("factory.runs-prune/1", "what `factory runs prune` removed or would remove",
         "factory.runs.prune:PruneReport"),
    # the bus and its tracer
    _doc("factory.smoke-report/1", "the report of `factory smoke` (running, terminal or completed)",
         "factory.bus.smoke_report:SmokeReservation", "factory.bus.smoke_report:SmokeTerminal",
         "factory.bus.smoke_report:SmokeReport"),
    _doc("factory.bus-verification/1", "the result of `factory bus verify`",
         "factory.bus.verify:BusVerification"),
    _doc("factory.event-log-fixed-point/1",
         "a bus event log's bytes at one moment (in verifications and smoke reports)",
         "factory.bus.logfile:FixedPoint"),
    # the operator
    _doc("factory.operator-receipt/1",
         "what `factory operator run` or `publish` did, reserved first",
         "factory.operator.receipt:OperatorReceipt"),
    _doc("factory.operator-intent/1", "what an operator run intends to do, signed before it acts",
         "factory.operator.intent:RunIntent"),
    _doc("factory.operator-publish-intent/1", "what a publish intends to push and open",
         "factory.operator.intent:PublishIntent"),
    _doc("factory.forge-snapshot/1", "the forge's state an intent was made against",
         "factory.operator.intent:ForgeSnapshot"),
    _doc("factory.operator-grant/1", "an operator key's grant of what it may do",
         "factory.operator.grant:Grant"),
    _doc("factory.operator-ledger-entry/1", "one entry of the operator's append-only ledger",
         "factory.operator.ledger:LedgerEntry"),
    # review transactions
    _doc("factory.review-receipt/1", "the receipt of a finalized review transaction",
         "factory.review.receipt:ReviewReceipt"),
    _doc("factory.review-state/1", "the state of a review transaction",
         "factory.review.state:ReviewState"),
    _doc("factory.review-state-record/1", "a review state as stored, with its revision",
         "factory.review.record:StateRecord"),
    _doc("factory.review-policy/1", "a repository's review policy",
         "factory.review.policy:Policy"),
    _doc("factory.review-gate-result/1", "the verdict of a git-boundary review check",
         "factory.review.gates.result:GateResult"),
    _doc("factory.review-preserved-lens-output/1", "a reviewer's output kept for an incident",
         "factory.review.incident:PreservedLensOutput"),
    # the decision gate
    _doc("factory.gate-scenario/1",
         "a decision gate scenario: conditions, stages and laws (TOML or JSON)",
         "factory.gate.scenario_doc:ScenarioDoc"),
    _doc("factory.gate-observation/1", "one piece of evidence handed to the decision gate",
         "factory.gate.observation:Observation"),
    _doc("factory.gate-evaluation/1",
         "a candidate of the decision gate: its inputs, delta and trace (evaluations.jsonl)",
         "factory.gate.evaluation:EvaluationRecord"),
    _doc("factory.gate-status/1", "what `factory gate status` prints: a run's head and stages",
         "factory.gate.reports:GateStatus"),
    _doc("factory.gate-verification/1",
         "the result of `factory gate verify`: four properties of an exported runpack",
         "factory.gate.reports:GateVerification"),
    _doc("factory.gate-runpack/1", "manifest.json of an exported runpack (`factory gate export`)",
         "factory.gate.reports:RunpackManifest"),
    _doc("factory.gate-entry/1", "one entry of a run's hash-chained history (history.jsonl)",
         "factory.gate.reports:GateEntry"),
    _doc("factory.gate-export-failure/1", "export-failed.json: why a runpack export stopped",
         "factory.gate.reports:ExportFailure"),
    # configuration
    _doc("factory.config-show/1",
         "the factory.toml values in effect and their sources (`factory config show --json`)",
         "factory.config.report:ConfigShow"),
    # rehearsals
    _doc("factory.rehearsal-scenario/1", "a script for the rehearsal (loopback) model",
         "factory.rehearsal.scenario:Scenario"),
    _doc("factory.rehearsal-log/1", "what the rehearsal model was asked and answered",
         "factory.rehearsal:RehearsalLog"),
)  # fmt: skip


def find(name: str) -> Document | None:
    """The published document called ``name`` (its short name or its schema id)."""
    for doc in REGISTRY:
        if name in (doc.name, doc.schema_id):
            return doc
    return None


def shipped(doc: Document) -> bytes:
    """The bytes of the shipped schema file of ``doc``."""
    return (resources.files(__package__) / "schemas" / f"{doc.name}.json").read_bytes()


def model_of(target: str) -> Any:
    """The model class named ``module:Class`` (imported now)."""
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def generate(doc: Document) -> bytes:
    """The schema of ``doc`` generated from its model(s) now: indented JSON plus LF."""
    from pydantic import TypeAdapter  # here only: the registry itself is stdlib

    models = [model_of(target) for target in doc.models]
    shape: Any = models[0]
    for model in models[1:]:
        shape = shape | model
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT}
    schema.update(TypeAdapter(shape).json_schema(by_alias=True))
    schema.setdefault("title", doc.schema_id)
    schema["$comment"] = f"{doc.schema_id}: {doc.summary}"
    return (json.dumps(schema, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

"""The JSON Schemas of factory's published documents, shipped as files (issue 9 §6).

Each ``NAME.json`` beside this module is generated from the document's strict model
(:data:`PUBLISHED`) in pydantic's *validation* mode: it describes what factory accepts when
it reads the document back, so every document factory writes validates against it. Fields
that have a default (added to a schema id after its first release) are optional there.
``factory schema NAME`` prints the shipped file as it is, without importing the models;
``tests/cli/test_schema_cmd.py`` regenerates each one and fails on any difference (run it
with ``FACTORY_UPDATE_GOLDEN=1`` to rewrite the files, then review the diff).

This catalogue imports ``providers`` (the doctor report), so it belongs to the CLI layer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import import_module, resources
from typing import Any

from pydantic import BaseModel, TypeAdapter

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class Published:
    """One published document: its short ``name``, schema id, a one-line summary, and the
    model(s) (``module:Class``; several when the document has more than one shape)."""

    name: str
    schema_id: str
    summary: str
    models: tuple[str, ...]


PUBLISHED: tuple[Published, ...] = (
    Published(
        "agent-receipt",
        "factory.agent-receipt/1",
        "what `factory agent` did and observed (receipt.json)",
        ("factory.agent.receipt:AgentReceipt",),
    ),
    Published(
        "receipt-verification",
        "factory.receipt-verification/1",
        "the result of `factory receipt verify`",
        ("factory.agent.verification:ReceiptVerification",),
    ),
    Published(
        "agent-progress",
        "factory.agent-progress/1",
        "one line of `factory agent --progress jsonl`",
        ("factory.agent.progress:ProgressRecord",),
    ),
    Published(
        "demo-report",
        "factory.demo-report/1",
        "the summary `factory demo` prints",
        ("factory.demo.report:DemoReport",),
    ),
    Published(
        "doctor",
        "factory.doctor/1",
        "the report of `factory doctor`",
        ("providers.doctor:DoctorReport",),
    ),
    Published(
        "smoke-report",
        "factory.smoke-report/1",
        "the report of `factory smoke` (running, terminal or completed)",
        (
            "factory.bus.smoke_report:SmokeReservation",
            "factory.bus.smoke_report:SmokeTerminal",
            "factory.bus.smoke_report:SmokeReport",
        ),
    ),
    Published(
        "bus-verification",
        "factory.bus-verification/1",
        "the result of `factory bus verify`",
        ("factory.bus.verify:BusVerification",),
    ),
    Published(
        "event-log-fixed-point",
        "factory.event-log-fixed-point/1",
        "a bus event log's bytes at one moment (in verifications and smoke reports)",
        ("factory.bus.logfile:FixedPoint",),
    ),
    Published(
        "operator-receipt",
        "factory.operator-receipt/1",
        "what `factory operator run` or `publish` did, reserved first",
        ("factory.operator.receipt:OperatorReceipt",),
    ),
    Published(
        "review-receipt",
        "factory.review-receipt/1",
        "the receipt of a finalized review transaction",
        ("factory.review.receipt:ReviewReceipt",),
    ),
    Published(
        "config-show",
        "factory.config-show/1",
        "the factory.toml values in effect and their sources (`factory config show --json`)",
        ("factory.config.report:ConfigShow",),
    ),
)


def find(name: str) -> Published | None:
    """The published document called ``name`` (its short name or its schema id)."""
    for doc in PUBLISHED:
        if name in (doc.name, doc.schema_id):
            return doc
    return None


def shipped(doc: Published) -> bytes:
    """The bytes of the shipped schema file of ``doc``."""
    return (resources.files(__package__) / f"{doc.name}.json").read_bytes()


def _model(target: str) -> type[BaseModel]:
    module, _, attr = target.partition(":")
    model: type[BaseModel] = getattr(import_module(module), attr)
    return model


def generate(doc: Published) -> bytes:
    """The schema of ``doc`` generated from its model(s) now: indented JSON plus LF."""
    models = [_model(target) for target in doc.models]
    shape: Any = models[0]
    for model in models[1:]:
        shape = shape | model
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT}
    schema.update(TypeAdapter(shape).json_schema(by_alias=True))
    schema.setdefault("title", doc.schema_id)
    schema["$comment"] = f"{doc.schema_id}: {doc.summary}"
    return (json.dumps(schema, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

"""The decision gate's published documents as strict models (all in
:mod:`factory.documents.registry`): what it prints (``factory.gate-status/1``,
``factory.gate-verification/1``) and what a runpack holds (``factory.gate-runpack/1``,
``factory.gate-entry/1``, ``factory.gate-export-failure/1``).

Both are built with keywords and printed as their JSON value with sorted keys, the same
bytes as the dicts they replace (goldens pin them). A verification reports what a runpack
says, and a runpack is hostile input: its manifest's ``run``, ``spec_hash`` and ``head``
are echoed as read (any JSON value), and a problem can quote a file name that is not UTF-8
(Python holds it with surrogate escapes), so problems are :data:`Text` — a ``str`` checked
by type only, which the stdout emitter escapes when printing.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, PlainValidator, WithJsonSchema

from factory.models import StrictModel

STATUS_SCHEMA: Final = "factory.gate-status/1"
VERIFICATION_SCHEMA: Final = "factory.gate-verification/1"
MANIFEST_SCHEMA: Final = "factory.gate-runpack/1"
EXPORT_FAILURE_SCHEMA: Final = "factory.gate-export-failure/1"
ENTRY_SCHEMA: Final = "factory.gate-entry/1"


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


Text = Annotated[str, PlainValidator(_text), WithJsonSchema({"type": "string"})]
StageState = Literal["completed", "open", "ready", "not-ready"]
AuthenticityStatus = Literal["pass", "fail", "not-applicable"]


class ScenarioRef(StrictModel):
    id: str
    spec_hash: str


class Head(StrictModel):
    seq: int
    hash: str


class GateStatus(StrictModel):
    """``factory gate status``: the head of a run and what its history implies."""

    schema_id: Literal["factory.gate-status/1"] = Field(default=STATUS_SCHEMA, alias="schema")
    run: str
    scenario: ScenarioRef
    params: dict[str, str]
    head: Head
    completed: bool
    stages: dict[str, StageState]
    intents: list[dict[str, Any]]
    settled: list[dict[str, Any]]


class Property(StrictModel):
    """One verified property: ``fail`` when any problem was found."""

    status: Literal["pass", "fail"]
    checked: int
    problems: list[Text]


class Freshness(Property):
    exported_at: str | None
    verified_at: str


class Authenticity(StrictModel):
    status: AuthenticityStatus
    checked: int
    verified: int
    unsigned: int
    problems: list[Text]


class Properties(StrictModel):
    record_integrity: Property
    source_authenticity: Authenticity
    freshness: Freshness
    replay_agreement: Property


class GateVerification(StrictModel):
    """``factory gate verify``: four separate properties of an exported runpack."""

    schema_id: Literal["factory.gate-verification/1"] = Field(
        default=VERIFICATION_SCHEMA, alias="schema"
    )
    runpack: Text
    run: Any
    spec_hash: Any
    head: Any
    properties: Properties
    ok: bool
    residual: str


class FileRow(StrictModel):
    """One file of a runpack: its path inside the pack, SHA-256 (hex) and size."""

    path: Text
    sha256: Text
    bytes: int


class RunpackManifest(StrictModel):
    """``manifest.json`` of an exported runpack (written last: no manifest, no export)."""

    schema_id: Literal["factory.gate-runpack/1"] = Field(default=MANIFEST_SCHEMA, alias="schema")
    run: str
    scenario: str
    spec_hash: str
    head: Head
    exported_at: str
    files: list[FileRow]
    root_hash: str


class ExportFailure(StrictModel):
    """``export-failed.json``: why an export stopped before its manifest."""

    schema_id: Literal["factory.gate-export-failure/1"] = Field(
        default=EXPORT_FAILURE_SCHEMA, alias="schema"
    )
    error: str


class GateEntry(StrictModel):
    """One entry of a run's hash-chained history (``history.jsonl``); ``body`` is the
    start, accept or settle record the gate applies, ``hash`` its domain-separated digest."""

    schema_id: Literal["factory.gate-entry/1"] = Field(default=ENTRY_SCHEMA, alias="schema")
    run: str
    seq: int
    prev: str
    body: dict[str, Any]
    hash: str

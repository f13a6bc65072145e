"""The ``factory.gate-observation/1`` document as a strict model (SPEC G: evidence).

The model is the schema: closed field sets, string bounds, the one-of ``observation`` body,
the known failure codes. :func:`parse_observation` validates a decoded document and turns
pydantic's first error into the sentence the gate has always said for that field (the
words land in a stored record's problem, and so in evaluation bytes: a golden file pins
them). Errors are ranked in the order a reader checks a document: unknown or missing
fields, then ``schema``, ``ingress``, ``scope``, ``observed_at``, ``observation``,
``mutated``, ``artefacts``, then the facets.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationError,
    model_validator,
)

from factory.gate.errors import EVIDENCE_REFUSED
from factory.gate.values import OutsideDomain, parse_instant
from factory.models import StrictModel

SCHEMA: Final = "factory.gate-observation/1"
EVIDENCE_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
SCOPES: Final = ("tree", "commit", "repository", "file", "none")
OPERATIONAL: Final = (
    "observation-unparsable",
    "observation-outside-domain",
    "provider-timeout",
    "provider-crashed",
    "provider-unavailable",
    "provider-output-limit",
    "provider-refused",
)
INTEGRITY: Final = ("evidence-hash-mismatch", "signature-invalid", "witness-forged")

Short = Annotated[str, StringConstraints(min_length=1, max_length=256)]
EvidenceId = Annotated[str, StringConstraints(pattern=EVIDENCE_ID_PATTERN)]


class _Closed(StrictModel):
    model_config = ConfigDict(populate_by_name=False)


class Scope(_Closed):
    kind: Literal["tree", "commit", "repository", "file", "none"]
    value: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = None


class AbsentBody(_Closed):
    complete: bool
    universe: Short


class FailureBody(_Closed):
    family: str
    code: str
    message: Annotated[str, StringConstraints(min_length=1, max_length=1024)]

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) == {"family", "code", "message"}:
            family = data["family"]
            known = (
                OPERATIONAL
                if family == "operational"
                else INTEGRITY
                if family == "integrity"
                else ()
            )
            if data["code"] not in known:
                raise ValueError("observation.failure: unknown family or code")
        return data


class ValueObservation(_Closed):
    value: Any


class AbsentObservation(_Closed):
    absent: AbsentBody


class FailureObservation(_Closed):
    failure: FailureBody


_ONE_OF = "observation must be exactly one of value, absent, failure"


def _one_of(raw: Any) -> Any:
    if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in _BODIES:
        raise ValueError(_ONE_OF)
    return raw


_BODIES = ("value", "absent", "failure")
Body = Annotated[
    Annotated[ValueObservation, Tag("value")]
    | Annotated[AbsentObservation, Tag("absent")]
    | Annotated[FailureObservation, Tag("failure")],
    Discriminator(lambda raw: next(iter(raw)) if isinstance(raw, dict) and raw else None),
    BeforeValidator(_one_of),
]


def _instant(raw: Any) -> str:
    try:
        parse_instant(raw)
    except OutsideDomain as exc:
        raise ValueError(f"observed_at: {exc}") from None
    return str(raw)


class Artefact(_Closed):
    role: Any
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    bytes: int


class Observation(_Closed):
    """One observation document; field order is the order errors are reported in."""

    schema_id: Literal["factory.gate-observation/1"] = Field(alias="schema")
    ingress: Literal["submitted", "acquired"]
    scope: Scope
    observed_at: Annotated[str, BeforeValidator(_instant)]
    observation: Body
    mutated: bool = False
    artefacts: list[Artefact] = Field(default=[], max_length=64)
    condition: Short
    producer: Short
    actor: Short | None = None
    content_type: Short
    derivation: list[EvidenceId] = Field(default=[], max_length=256)


_ORDER = list(Observation.model_fields)
_SHAPE = {"missing", "extra_forbidden", "model_type", "model_attributes_type", "dict_type"}


def parse_observation(doc: Any) -> Observation:
    """The observation in ``doc`` (a decoded JSON value); :data:`EVIDENCE_REFUSED` naming
    the first problem otherwise, in the gate's words."""
    if not isinstance(doc, dict):
        raise EVIDENCE_REFUSED("the document is not an object")
    try:
        return Observation.model_validate(doc)
    except ValidationError as exc:
        raise EVIDENCE_REFUSED(_sentence(exc.errors(), doc)) from None


def _sentence(errors: list[Any], doc: dict[str, Any]) -> str:
    fields = {_field(e) for e in errors}
    extra = sorted(
        str(e["loc"][0]) for e in errors if len(e["loc"]) == 1 and e["type"] == "extra_forbidden"
    )
    missing = sorted(
        str(e["loc"][0]) for e in errors if len(e["loc"]) == 1 and e["type"] == "missing"
    )
    if extra or missing:
        return f"unknown field {extra[0]!r}" if extra else f"lacks {missing[0]!r}"
    first = min(fields, key=_ORDER.index)
    mine = [e for e in errors if _field(e) == first]
    shape = [e for e in mine if e["type"] in _SHAPE]
    return _worded(first, (shape or mine)[0], doc)


def _field(error: Any) -> str:
    name = str(error["loc"][0])
    return "schema_id" if name == "schema" else name


_FIXED = {
    "schema_id": f"schema must be {SCHEMA!r}",
    "ingress": "ingress must be submitted or acquired",
    "mutated": "mutated must be true or false",
}


def _worded(field: str, error: Any, doc: dict[str, Any]) -> str:
    if field in _FIXED:
        return _FIXED[field]
    if error["type"] == "value_error":  # a sentence a validator already wrote
        return str(error["ctx"]["error"])
    loc = tuple(error["loc"])
    if field == "scope":
        return _scope_sentence(loc, error)
    if field == "observation":
        return _body_sentence(loc, error)
    if field == "artefacts":
        if len(loc) == 1:
            return "artefacts must be a list of at most 64 {role, sha256, bytes}"
        return "artefacts must be a list of {role, sha256, bytes}"
    if field == "derivation":
        if len(loc) == 1:
            return "derivation must be a list of at most 256 evidence ids"
        return "derivation holds something that is not an evidence id"
    return _short_sentence(field, error, 256)


def _short_sentence(what: str, error: Any, limit: int) -> str:
    raw = error.get("input")
    if error["type"] == "string_unicode" and isinstance(raw, str) and 0 < len(raw) <= limit:
        return f"{what} holds a lone surrogate"
    return f"{what} must be a non-empty string of at most {limit} characters"


def _scope_sentence(loc: tuple[Any, ...], error: Any) -> str:
    if loc == ("scope", "kind") and error["type"] != "missing":
        return f"scope.kind must be one of {', '.join(SCOPES)}"
    if loc == ("scope", "value"):
        return _short_sentence("scope.value", error, 4096)
    return "scope must be {kind, value}"


def _body_sentence(loc: tuple[Any, ...], error: Any) -> str:
    kind = loc[1] if len(loc) > 1 else None
    inner = loc[3:]
    if kind == "absent":
        if inner == ("complete",) and error["type"] != "missing":
            return "observation.absent.complete must be true or false"
        if inner == ("universe",) and error["type"] != "missing":
            return _short_sentence("universe", error, 256)
        return "observation.absent must be {universe, complete}"
    if kind == "failure":
        if inner == ("message",) and error["type"] != "missing":
            return _short_sentence("message", error, 1024)
        return "observation.failure must be {family, code, message}"
    return _ONE_OF

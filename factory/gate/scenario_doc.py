"""The ``factory.gate-scenario/1`` document as a strict model (SPEC G: scenarios).

The model is the document's shape, whether it was written in TOML or JSON: closed key
sets at every level, ids of the one id form, bounded texts, the policy's facets, a scope
of exactly one of ``param`` or ``value``, Ed25519 keys of 32 bytes. What needs the whole
document — unique ids, references resolved, an acyclic stage graph, monotone laws,
declared parameters, legal domains, predicates and bindings — is checked by
:mod:`factory.gate.scenario_parse` over the validated model.

:func:`parse_scenario_doc` turns pydantic's first error into the sentence the gate has
always said for that place (``conditions[0].policy: unknown key 'x'``,
``condition c.policy.ingress: a non-empty list of submitted / acquired``). Laws, domains
and operands are the scenario's own small languages and stay JSON values here (``Any``):
:mod:`factory.gate.logic`, :mod:`factory.gate.values` and :mod:`factory.gate.predicates`
read them and say what is wrong in their own words.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from factory.gate.errors import SCENARIO_INVALID
from factory.gate.predicates import NAMES
from factory.gate.scenario import SCHEMA, SCOPE_KINDS
from factory.models import StrictModel

ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Text = Annotated[str, StringConstraints(max_length=4096)]
Producer = Annotated[str, StringConstraints(min_length=1)]
Ingress = Literal["submitted", "acquired"]
INGRESS: Final[tuple[Ingress, ...]] = ("submitted", "acquired")


def _refused(sentence: str) -> PydanticCustomError:
    """A check's own sentence, reported as written (not pydantic's wording)."""
    return PydanticCustomError("scenario", sentence)


class PublicKey(StrictModel):
    """A key evidence may be signed with: the raw 32-byte Ed25519 public key, base64."""

    ed25519: str

    @field_validator("ed25519")
    @classmethod
    def _key(cls, value: str) -> str:
        try:
            key = base64.b64decode(value, validate=True)
        except binascii.Error:
            raise _refused("not base64") from None
        if len(key) != 32:
            raise _refused("an Ed25519 public key is 32 bytes")
        return value


class ScopeDoc(StrictModel):
    """The scope evidence must have observed: a kind and exactly one of a run parameter
    (``param``) or a fixed ``value``."""

    kind: Literal["tree", "commit", "repository", "file", "none"]
    param: str | None = None
    value: str | None = None

    @model_validator(mode="after")
    def _one(self) -> ScopeDoc:
        if (self.param is None) == (self.value is None):
            raise _refused("give exactly one of param or value")
        return self


class PolicyDoc(StrictModel):
    """Which evidence a condition accepts; every facet narrows, none widens."""

    ingress: list[Ingress] = Field(default_factory=lambda: list(INGRESS), min_length=1)
    producers: list[Producer] = Field(default_factory=list)
    scope: ScopeDoc | None = None
    independent: bool = False
    max_age_s: Annotated[int, Field(gt=0)] | None = None
    signed_by: list[str] = Field(default_factory=list)


class AcquireDoc(StrictModel):
    """How evidence for a condition is acquired: a provider and its arguments (checked
    per provider when the scenario loads)."""

    model_config = ConfigDict(extra="allow")

    provider: str

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ConditionDoc(StrictModel):
    """One condition: its domain, predicate and operand, evidence policy and binding."""

    id: Id
    description: Text = ""
    domain: Any
    predicate: str
    operand: Any = None
    universe: Id | None = None
    policy: PolicyDoc | None = None  # none: every facet open (a default instance costs 10 µs)
    acquire: AcquireDoc | None = None


class IntentDoc(StrictModel):
    """An effect an accepted completion makes eligible for dispatch."""

    kind: Id
    detail: Text | None = None


class StageDoc(StrictModel):
    """One stage: a prerequisite law over stage ids, a completion law over conditions."""

    id: Id
    description: Text = ""
    after: Any = None
    complete: Any
    intents: list[IntentDoc] = Field(default_factory=list)


class CompletionDoc(StrictModel):
    """The scenario's own completion: a law over stage ids, and its intents."""

    law: Any
    intents: list[IntentDoc] = Field(default_factory=list)


class ScenarioDoc(StrictModel):
    """A scenario document (TOML or JSON); field order is the order errors are reported in."""

    schema_id: Literal["factory.gate-scenario/1"] = Field(alias="schema")
    id: Id
    description: Text = ""
    params: list[Id] = Field(default_factory=list)
    keys: dict[Id, PublicKey] = Field(default_factory=dict)
    conditions: list[ConditionDoc] = Field(min_length=1)
    stages: list[StageDoc] = Field(min_length=1)
    completion: CompletionDoc


def parse_scenario_doc(raw: Any) -> ScenarioDoc:
    """The model of a decoded scenario document; :data:`SCENARIO_INVALID` naming the first
    problem in the gate's words otherwise."""
    if not isinstance(raw, dict):
        raise SCENARIO_INVALID("the document is not a table/object")
    try:
        return ScenarioDoc.model_validate(raw)
    except ValidationError as exc:
        raise SCENARIO_INVALID(_sentence(exc.errors(), raw)) from None


def _sentence(errors: list[Any], raw: dict[str, Any]) -> str:
    first = errors[0]
    for error in errors:  # an unknown key is reported before what is wrong beside it
        parent = tuple(error["loc"][:-1])
        if error["type"] == "extra_forbidden" and tuple(first["loc"][: len(parent)]) == parent:
            first = error
            break
    loc = tuple(first["loc"])
    if first["type"] == "extra_forbidden":
        return f"{_where(loc[:-1], raw)}: unknown key {loc[-1]!r}"
    if loc[:1] == ("schema",):
        return f"schema must be {SCHEMA!r}"
    if first["type"] == "scenario":
        return f"{_where(loc, raw)}: {first['msg']}"
    if first["type"] == "missing" and loc[-1] in ("complete", "law"):
        return f"{_where(loc, raw)}: {_LAW}"
    return f"{_where(_phrased(loc), raw)}: {_phrase(_phrased(loc))}"


_LAW = "a requirement is an id or one of all/any/quorum/not"
_ID = "an id of letters, digits, '_', '.', '-' (at most 128)"
_TEXT = "a string of at most 4096 characters"
_SCOPE = f"{{ kind = one of {', '.join(SCOPE_KINDS)}, param|value }}"
_INTENT = '{ kind = "...", detail = "..." }'
_PHRASES: Final = {
    "id": _ID,
    "universe": _ID,
    "kind": _ID,
    "description": _TEXT,
    "detail": _TEXT,
    "params": "a list of parameter names",
    "keys": 'a table of key id = { ed25519 = "<base64 raw public key>" }',
    "conditions": "a non-empty list ([[conditions]] tables)",
    "stages": "a non-empty list ([[stages]] tables)",
    "completion": "a table with a law over stage ids (all/any/quorum)",
    "predicate": f"predicate must be one of {', '.join(NAMES)}",
    "domain": 'a domain is a table such as { kind = "integer" }',
    "policy": "a table",
    "ingress": "a non-empty list of submitted / acquired",
    "producers": "a list of producer names (a trailing * is a prefix)",
    "scope": _SCOPE,
    "param": "a string",
    "value": "a string",
    "independent": "true or false",
    "max_age_s": "a positive integer of seconds",
    "signed_by": "key ids declared under [keys]",
    "acquire": 'a table with provider = "..."',
    "intents": 'a list of { kind = "..." } tables',
}


def _phrased(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The place a phrase is about: a list item of a list phrased as a whole (``params``,
    ``producers``...) is the list; inside a scope or key, the scope or key."""
    names = [part for part in loc if isinstance(part, str)]
    if "scope" in names and loc[-1] in ("param", "value"):
        return loc
    for whole in ("scope", "acquire"):
        if whole in names:
            return loc[: loc.index(whole) + 1]
    if loc[:1] == ("keys",) and loc[-1] != "[key]":
        return loc[:2]
    if names and names[-1] in ("ingress", "producers", "signed_by") and isinstance(loc[-1], int):
        return loc[:-1]
    return loc


def _phrase(loc: tuple[Any, ...]) -> str:
    if loc[-1] == "[key]":
        return _ID
    if loc[:1] == ("keys",) and len(loc) == 2:
        return 'exactly { ed25519 = "<base64>" }'
    if isinstance(loc[-1], int):
        if len(loc) >= 2 and loc[-2] == "intents":
            return _INTENT
        if loc[0] == "params":
            return _ID
        return "a table"
    return _PHRASES.get(str(loc[-1]), "not of the right form")


def _where(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    """``conditions[0]`` until a condition's id is valid, then ``condition ID`` (and the
    same for stages); ``(top)`` for the document itself."""
    if not loc:
        return "(top)"
    head, rest = str(loc[0]), loc[1:]
    if head in ("conditions", "stages") and rest and isinstance(rest[0], int):
        item = _item(raw.get(head), rest[0])
        if rest[1:] and rest[1] != "id" and _is_id(item.get("id")):
            head, rest = f"{head[:-1]} {item['id']}", rest[1:]
    out = head
    for part in rest:
        if part != "[key]":
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _item(items: Any, index: int) -> dict[str, Any]:
    item = items[index] if isinstance(items, list) and index < len(items) else None
    return item if isinstance(item, dict) else {}


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(ID_PATTERN, value) is not None

"""Strict models of what the reviewer, refuter and validator return (SPEC R; the reference's
``review schema reviewer|refuter|validator``).

The schema is the executable boundary: unknown fields are refused, types are strict, and
every evidence or proof string must be *concrete* — non-empty after trimming, one of no
known placeholder (``n/a``, ``todo``, ``passed`` …), not a bare template (``<proof>``,
``{{x}}``), valid Unicode. Severe findings (BLOCKER, CRITICAL) must say their evidence class
and causal disposition. The model never supplies ids, hashes or lineage: there are no such
fields to fill. Parsing malformed bytes raises :class:`ReviewInputInvalid` and changes
nothing.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from typing import Annotated, Any, Final, TypeVar

from pydantic import AfterValidator, ConfigDict, Field, ValidationError, model_validator

from factory.models import StrictModel, describe_validation_error
from factory.review.documents import strict_json
from factory.review.errors import PRESERVED_NOT_RESULT, ReviewInputInvalid
from factory.review.names import (
    MAX_FINDINGS_PER_LENS,
    SEVERE,
    Causality,
    EvidenceClass,
    LensName,
    RefuterOutcome,
    Severity,
)

INPUT_LIMIT = 1 << 20  # bytes per reviewer/refuter/validator document
TEXT_MAX = 4000
PLACEHOLDERS: Final = frozenset(
    {
        "",
        "-",
        "--",
        "?",
        "...",
        "…",
        "n/a",
        "na",
        "none",
        "null",
        "nil",
        "todo",
        "tbd",
        "pass",
        "passed",
        "success",
        "successful",
        "ok",
        "okay",
        "done",
        "yes",
        "true",
        "false",
        "placeholder",
        "evidence",
        "proof",
        "see above",
        "see code",
        "obvious",
    }
)
_TEMPLATE = re.compile(r"^\s*(?:<[^<>]*>|\{+[^{}]*\}+|\[[^\[\]]*\])\s*$")


def concrete(text: str) -> str:
    """Return ``text`` trimmed if it is concrete evidence; raise ``ValueError`` otherwise."""
    trimmed = text.strip()
    if "\x00" in trimmed:
        raise ValueError("contains a NUL character")
    try:
        trimmed.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode (lone surrogate)") from None
    if not any(_visible(ch) for ch in trimmed):
        raise ValueError("has no visible character, not concrete evidence")
    if trimmed.lower().rstrip(".!").strip() in PLACEHOLDERS:
        raise ValueError(f"is a placeholder ({trimmed!r}), not concrete evidence")
    if _TEMPLATE.match(trimmed):
        raise ValueError(f"is an unfilled template ({trimmed!r})")
    if len(trimmed) > TEXT_MAX:
        raise ValueError(f"is longer than {TEXT_MAX} characters")
    return trimmed


def _visible(ch: str) -> bool:
    """Not a separator, control, format (``\u200b``, ``\ufeff``) or unassigned code point."""
    return unicodedata.category(ch)[0] not in "ZC"


def _location(text: str) -> str:
    trimmed = text.strip()
    if not trimmed or len(trimmed) > 1000 or "\n" in trimmed or "\x00" in trimmed:
        raise ValueError("must be one non-empty line of at most 1000 characters")
    trimmed.encode("utf-8")
    return trimmed


Concrete = Annotated[str, AfterValidator(concrete)]
Location = Annotated[str, AfterValidator(_location)]
Proofs = Annotated[tuple[Concrete, ...], Field(min_length=1, max_length=50)]


class FindingInput(StrictModel):
    """One finding as a lens reports it (no id, no lens: code assigns those)."""

    location: Location = Field(description="path:line inside the changed paths")
    severity: Severity
    claim: Concrete
    proof_refs: Proofs
    evidence_class: EvidenceClass | None = None
    causal_disposition: Causality | None = None

    @model_validator(mode="after")
    def _severe_is_classified(self) -> FindingInput:
        if self.severity in SEVERE and (
            self.evidence_class is None or self.causal_disposition is None
        ):
            raise ValueError(
                "a BLOCKER or CRITICAL finding needs evidence_class and causal_disposition"
            )
        return self


class ReviewerInput(StrictModel):
    """A lens result: findings (possibly none) and concrete evidence of what was inspected."""

    findings: Annotated[tuple[FindingInput, ...], Field(max_length=MAX_FINDINGS_PER_LENS)]
    evidence: Annotated[tuple[Concrete, ...], Field(min_length=1, max_length=100)]
    lens: LensName | None = Field(default=None, description="if given, must be the bound lens")
    binding: str | None = Field(default=None, description="if given, the lens binding digest")


#: The refuter's and the validator's inputs are read only by the calls that pass them, so
#: their validators are built when first used, not by every process that imports this.
ON_DEMAND = ConfigDict(defer_build=True)


class RefuterResultInput(StrictModel):
    """The refuter's outcome for one inferential candidate-causal finding."""

    model_config = ON_DEMAND

    finding_id: Annotated[str, Field(pattern=r"^R[1-4]-[0-9]{3}$")]
    outcome: RefuterOutcome
    proof_refs: Proofs


class RefuterInput(StrictModel):
    """One refuter batch: an outcome for every finding sent to it, and nothing else."""

    model_config = ON_DEMAND

    results: Annotated[tuple[RefuterResultInput, ...], Field(max_length=4 * MAX_FINDINGS_PER_LENS)]


class CheckInput(StrictModel):
    """One of the targeted validator's two checks."""

    model_config = ON_DEMAND

    passed: bool
    evidence: Annotated[tuple[Concrete, ...], Field(min_length=1, max_length=100)]


class FollowUpInput(StrictModel):
    """A non-blocking observation with its proof."""

    model_config = ON_DEMAND

    observation: Concrete
    proof_refs: Proofs


class ValidatorInput(StrictModel):
    """The targeted validator of a correction: original criteria and correction regression."""

    model_config = ON_DEMAND

    original_criteria: CheckInput
    correction_regression: CheckInput
    follow_ups: Annotated[tuple[FollowUpInput, ...], Field(max_length=100)]
    fix_delta_hash: str | None = Field(
        default=None, description="if given, must equal the measured fix delta"
    )


M = TypeVar("M", bound=StrictModel)
PRESERVED_SCHEMA: Final = "factory.review-preserved-lens-output/1"


def parse_input(model: type[M], data: bytes, *, what: str) -> M:
    """Parse ``data`` as exactly one ``model`` document.

    Raises:
        ReviewInputInvalid: not strict JSON, unknown field, wrong type, not concrete, or a
            preserved incident artifact (those are replayed, never accepted as results).
    """
    value = strict_json(data, what=what, limit=INPUT_LIMIT)
    if isinstance(value, dict) and value.get("schema") == PRESERVED_SCHEMA:
        raise PRESERVED_NOT_RESULT(
            f"{what} is a preserved incident artifact ({PRESERVED_SCHEMA}), not a result"
        )
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise ReviewInputInvalid(f"{what} is invalid: {describe_validation_error(exc)}") from None


SCHEMAS: Final[dict[str, type[StrictModel]]] = {
    "reviewer": ReviewerInput,
    "refuter": RefuterInput,
    "validator": ValidatorInput,
}


def json_schema(role: str) -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) generated from the model of ``role``."""
    doc = SCHEMAS[role].model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"factory.review-{role}-input/1",
        **doc,
    }


_WIRE_DROP = ("title", "default", "description", "minLength", "maxLength")


def _strict_object(node: Any) -> Any:
    if isinstance(node, dict):
        for key in _WIRE_DROP:
            node.pop(key, None)
        for value in list(node.values()):
            _strict_object(value)
        props = node.get("properties")
        if node.get("type") == "object" and isinstance(props, dict):
            optional = set(props) - set(node.get("required", ()))
            for name in optional:
                if {"type": "null"} not in props[name].get("anyOf", ()):
                    props[name] = {"anyOf": [props[name], {"type": "null"}]}
            node["required"] = sorted(props)
            node["additionalProperties"] = False
    elif isinstance(node, list):
        for value in node:
            _strict_object(value)
    return node


def wire_schema(role: str) -> dict[str, Any]:
    """The output schema handed to a model's strict structured-output mode: every property
    required, the optional ones nullable (``null`` means absent to the parser)."""
    doc = copy.deepcopy(SCHEMAS[role].model_json_schema())
    return dict(_strict_object(doc))

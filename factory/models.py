"""The strict pydantic base every factory schema uses (SPEC F-4).

A schema is the executable boundary: unknown fields are refused, instances are frozen,
and strings are not coerced from numbers. Parse external bytes with :func:`parse_model`,
which turns a pydantic ``ValidationError`` into a one-line typed error instead of a dump.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from factory.documents.canonical import canonical_bytes, digest
from factory.documents.surrogates import holds_lone_surrogate
from factory.errors import INTERNAL, Code

M = TypeVar("M", bound="StrictModel")


class StrictModel(BaseModel):
    """Frozen, ``extra="forbid"``, strict pydantic v2 model."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    def to_json_value(self) -> dict[str, Any]:
        """The JSON value of this model (by alias, ``None`` kept) for canonical hashing."""
        return self.model_dump(mode="json", by_alias=True)

    def canonical(self) -> bytes:
        """RFC 8785 bytes of :meth:`to_json_value`."""
        return canonical_bytes(self.to_json_value())


class RevisionedModel(StrictModel):
    """A document that carries its own ``revision``: the domain-separated digest
    (:data:`REVISION_TAG`) of the RFC 8785 bytes of everything else. Subclasses declare
    ``revision: str | None = None`` and set the tag."""

    REVISION_TAG: ClassVar[str] = ""

    def body_value(self) -> dict[str, Any]:
        """The JSON value the revision is computed over: everything but ``revision``."""
        value = self.to_json_value()
        value.pop("revision", None)
        return value

    def compute_revision(self) -> str:
        return digest(self.REVISION_TAG, self.body_value())

    def closed(self: M) -> M:
        """A copy with ``revision`` set to :meth:`compute_revision`."""
        return self.model_copy(update={"revision": self.compute_revision()})  # type: ignore[attr-defined]


class SparseModel(StrictModel):
    """A document part whose optional keys are absent unless given: a field left at its
    ``None`` default is not written at all, one given as ``None`` is written as ``null``.
    Build it with only the keywords the document says."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        unset: set[str] = set()
        for name, info in type(self).model_fields.items():
            if name not in self.model_fields_set and getattr(self, name) is None:
                unset.update((name, info.alias or name))
        return {key: value for key, value in data.items() if key not in unset}


class ErrorRecord(StrictModel):
    """A typed error inside a document: its registered ``code`` and the one-line message
    (without paths when the document may travel)."""

    code: str
    message: str


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming the first failing field: ``field.path: reason``."""
    errors = exc.errors()
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "(root)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def parse_model(
    model: type[M],
    data: Any,
    *,
    code: Code[Any] = INTERNAL,
    what: str = "document",
) -> M:
    """Validate ``data`` (a JSON value) as ``model`` or raise ``code``'s error with one line.

    JSON input is validated in lax-for-JSON mode (strings stay strings, ints stay ints),
    which pydantic applies to ``model_validate_json``; here values are already decoded, so
    strict mode applies as declared on the model.
    """
    if holds_lone_surrogate(data):
        # A JSON "\\ud800" escape decodes to a code point no UTF-8 text can hold: the
        # document could never be hashed or printed, so it is not a document (issue 24 §4).
        raise code(f"{what} holds text that is not valid Unicode (a lone surrogate escape)")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise code(f"{what} is invalid: {describe_validation_error(exc)}") from exc

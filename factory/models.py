"""The strict pydantic base every factory schema uses (SPEC F-4).

A schema is the executable boundary: unknown fields are refused, instances are frozen,
and strings are not coerced from numbers. Parse external bytes with :func:`parse_model`,
which turns a pydantic ``ValidationError`` into a one-line typed error instead of a dump.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from factory.canonical import canonical_bytes
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
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise code(f"{what} is invalid: {describe_validation_error(exc)}") from exc

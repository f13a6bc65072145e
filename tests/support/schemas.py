"""Check a document against the JSON Schema factory ships for it (``factory schema NAME``)."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from factory.documents.registry import find, shipped


def validator(name: str) -> Draft202012Validator:
    """A validator for the shipped schema ``name`` (itself checked against the dialect)."""
    doc = find(name)
    assert doc is not None, f"{name} is not a published document"
    schema = json.loads(shipped(doc))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def assert_valid(name: str, value: Any) -> None:
    """``value`` validates against the shipped schema ``name``; the failure names each error."""
    errors = sorted(validator(name).iter_errors(value), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]

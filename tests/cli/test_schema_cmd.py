"""``factory schema [NAME]`` (issue 9 §6): the shipped JSON Schemas are the models' own,
every pinned document validates against its schema, and the command prints them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import get_args

import pytest
from jsonschema import Draft202012Validator

from factory.documents.registry import REGISTRY, Document, find, generate, model_of, shipped
from tests.support.cli import run_factory
from tests.support.golden import assert_golden
from tests.support.schemas import assert_valid, validator

TESTS = Path(__file__).resolve().parents[1]
SHIPPED = TESTS.parent / "factory" / "documents" / "schemas"

# The pinned documents (issue 10 §1) and the schema each must satisfy.
GOLDEN = {
    "receipt-verification": ["agent/golden/receipt-verification*.json"],
    "demo-report": ["agent/golden/demo-report.json"],
    "doctor": ["providers/golden/doctor-*.json"],
    "bus-verification": ["bus/golden/bus-verification-*.json"],
    "event-log-fixed-point": ["bus/golden/fixed-point*.json"],
    "smoke-report": ["bus/golden/smoke-*.json"],
}


@pytest.mark.parametrize("doc", REGISTRY, ids=lambda d: d.name)
def test_shipped_schema_is_generated_from_the_model(doc: Document) -> None:
    assert_golden(SHIPPED / f"{doc.name}.json", generate(doc))
    schema = json.loads(shipped(doc))
    Draft202012Validator.check_schema(schema)
    # The schema-id field is a constant equal to the published id, in every shape.
    shapes = [schema["$defs"][ref["$ref"].split("/")[-1]] for ref in schema.get("anyOf", [])]
    for shape in shapes or [schema]:
        consts = [p.get("const") for p in shape["properties"].values()]
        assert doc.schema_id in consts, shape.get("title")


def test_no_stray_schema_files() -> None:
    names = {p.stem for p in SHIPPED.glob("*.json")}
    assert names == {doc.name for doc in REGISTRY}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_pinned_documents_validate(name: str) -> None:
    files = sorted(f for pattern in GOLDEN[name] for f in TESTS.glob(pattern))
    assert files, name
    for path in files:
        assert_valid(name, json.loads(path.read_bytes()))


def test_schema_refuses_what_the_model_refuses() -> None:
    """Negative controls: an unknown key, a wrong schema id, a missing field."""
    value = json.loads((TESTS / "providers/golden/doctor-ready.json").read_bytes())
    check = validator("doctor")
    assert check.is_valid(value)
    assert not check.is_valid({**value, "extra": 1})
    assert not check.is_valid({**value, "schema": "factory.doctor/2"})
    assert not check.is_valid({k: v for k, v in value.items() if k != "routes"})
    smoke = json.loads((TESTS / "bus/golden/smoke-report.json").read_bytes())
    assert not validator("smoke-report").is_valid({**smoke, "status": "running"})


def test_cli_prints_the_shipped_bytes() -> None:
    for name in ("agent-receipt", "factory.smoke-report/1"):
        proc = run_factory(["schema", name])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (SHIPPED / f"{name.split('.')[-1].split('/')[0]}.json").read_bytes()


def test_cli_lists_without_a_name_and_in_help() -> None:
    listing = run_factory(["schema"])
    helped = run_factory(["schema", "--help"])
    assert listing.returncode == 0 and helped.returncode == 0
    for doc in REGISTRY:
        assert f"  {doc.name} ".encode() in listing.stdout
        assert doc.schema_id.encode() in helped.stdout
    assert listing.stderr == b""


@pytest.mark.parametrize("name", ["agent-receipts", "", "factory.doctor/2", "../doctor"])
def test_cli_unknown_name_is_a_usage_error(name: str) -> None:
    proc = run_factory(["schema", name])
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "unknown-schema" in err and f"among the {len(REGISTRY)}" in err
    assert "\u2026" not in err and "more)" not in err  # never a list cut mid-name
    assert "run factory schema without a name to list" in err
    if name == "agent-receipts":  # a near miss is named
        assert "did you mean agent-receipt" in err


def test_cli_refuses_two_names() -> None:
    proc = run_factory(["schema", "doctor", "demo-report"])
    assert proc.returncode == 2 and proc.stdout == b""


_SCHEMA_ID = re.compile(r"^factory\.[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*/[1-9][0-9]*$")


def _literal_ids(root: Path) -> dict[str, str]:
    """Every ``Literal["factory.…/n"]`` under ``root``: schema id → ``module:Class``."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_bytes())
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "Literal":
                    for leaf in ast.walk(node.slice):
                        text = leaf.value if isinstance(leaf, ast.Constant) else None
                        if isinstance(text, str) and _SCHEMA_ID.fullmatch(text):
                            found.setdefault(text, f"{module}:{cls.name}")
    return found


def test_the_registry_names_every_schema_literal_in_the_code() -> None:
    """No document escapes the registry: each schema-id ``Literal`` in factory/ and
    providers/ is registered, and each registered model carries that very id."""
    found = {**_literal_ids(TESTS.parent / "factory"), **_literal_ids(TESTS.parent / "providers")}
    assert len(found) >= 30
    registered = {doc.schema_id: doc for doc in REGISTRY}
    assert sorted(set(found) - set(registered)) == []
    for schema_id, doc in registered.items():
        for target in doc.models:
            field = model_of(target).model_fields["schema_id"]
            assert get_args(field.annotation) == (schema_id,), target


def test_the_scan_sees_a_new_literal(tmp_path: Path) -> None:
    """Negative control: a model added with a fresh schema id is found by the scan."""
    pkg = tmp_path / "factory"
    pkg.mkdir()
    (pkg / "extra.py").write_text(
        "from typing import Literal\nclass New:\n    schema_id: Literal['factory.brand-new/1']\n"
    )
    assert _literal_ids(pkg) == {"factory.brand-new/1": "factory.extra:New"}
    assert find("factory.brand-new/1") is None

"""One raise style for typed errors: ``raise CODE(fact)`` (design/GLOSSARY.md, issue 25).

A ratchet: ``raise SomeError(fact, code=CODE)`` — the same error spelt the long way, its
code passed at the call site — no longer appears in ``factory/``. A planted one is caught
(the negative control); ``raise CODE(fact)`` and a raise that carries more than the code
(``next=``, a lineage) are not this pattern."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def long_form(source: str) -> list[int]:
    """Lines of ``raise Name(fact, code=CODE)`` in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call = node.exc
            kws = [k.arg for k in call.keywords]
            if isinstance(call.func, ast.Name) and len(call.args) == 1 and kws == ["code"]:
                lines.append(node.lineno)
    return lines


def test_no_typed_error_is_raised_the_long_way() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "factory").rglob("*.py"))
        if (hits := long_form(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "write raise CODE(fact) instead"


def test_the_scan_catches_a_planted_long_form() -> None:
    assert long_form("raise ReviewRefused('x', code=LENS_HAS_RESULT)\n") == [1]
    assert long_form("raise LENS_HAS_RESULT('x')\n") == []
    assert long_form("raise ReviewRefused('x', code=C, next=('a',))\n") == []


# The decision gate's refusals are typed (``raise SCENARIO_INVALID(fact)``,
# ``raise EVIDENCE_REFUSED(fact)``); a bare ``ValueError`` is left only where pydantic asks
# for one (a validator inside a model) or where the function catches it itself.
GATE_VALUE_ERRORS = {
    ("factory/gate/observation.py", "_known"),  # FailureBody's model validator
    ("factory/gate/observation.py", "_one_of"),  # the observation body's validator
    ("factory/gate/observation.py", "_instant"),  # observed_at's validator
    ("factory/gate/reports.py", "_text"),  # the Text field's validator
    ("factory/gate/values.py", "parse_instant"),  # caught three lines below
}


def bare_value_errors(source: str) -> list[str]:
    """Names of the functions in ``source`` that ``raise ValueError(...)``."""
    names = []
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Raise)
                    and isinstance(node.exc, ast.Call)
                    and isinstance(node.exc.func, ast.Name)
                    and node.exc.func.id == "ValueError"
                ):
                    names.append(func.name)
    return names


def test_the_decision_gate_raises_no_bare_value_error() -> None:
    found = {
        (str(path.relative_to(ROOT)), name)
        for path in sorted((ROOT / "factory" / "gate").rglob("*.py"))
        for name in bare_value_errors(path.read_text(encoding="utf-8"))
    }
    assert found <= GATE_VALUE_ERRORS, "raise a registered code: raise CODE(fact)"


def test_the_gate_scan_catches_a_planted_value_error() -> None:
    assert bare_value_errors("def f():\n    raise ValueError('x')\n") == ["f"]
    assert bare_value_errors("def f():\n    raise SCENARIO_INVALID('x')\n") == []

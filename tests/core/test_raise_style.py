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

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


# Raises through a helper that builds the error (``raise refuse(state, fact, CODE)``), or a
# code held in a variable (``raise code(fact)``): the ratchet's exemptions, per file, as a
# ceiling. A helper that only words the fact is written ``raise CODE(_words(...))``. Most
# left carry context the error needs (a lineage, a log line, a retry wait); shrink, never
# grow, this table.
HELPER_RAISES = {
    "factory/agent/creating.py": 1,
    "factory/bus/log.py": 3,
    "factory/bus/logfile.py": 7,
    "factory/cli/preflight.py": 1,
    "factory/documents/reading.py": 2,
    "factory/gate/scenario_doc.py": 3,  # PydanticCustomError inside the model's validators
    "factory/gitio/candidate.py": 2,
    "factory/gitio/repository.py": 1,
    "factory/gitio/run.py": 1,
    "factory/gitio/snapshot.py": 1,
    "factory/inventory/reader.py": 1,
    "factory/inventory/walk.py": 1,
    "factory/models.py": 2,
    "factory/operator/forge_client.py": 2,
    "factory/operator/session.py": 4,
    "factory/review/finalize.py": 7,
    "factory/review/lens.py": 1,
    "factory/review/lock.py": 2,
    "factory/review/machine.py": 11,
    "factory/review/mirror/sync.py": 5,
    "factory/review/mirror/transport.py": 3,
    "factory/review/record.py": 8,
    "factory/review/store.py": 9,
}


def helper_raises(source: str) -> int:
    """How many raises in ``source`` call a lower-case name (a helper or a code variable)."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            count += bool(name) and (name[0].islower() or name[0] == "_")
    return count


def test_raises_through_helpers_do_not_grow() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "factory").rglob("*.py"))
        if (hits := helper_raises(path.read_text(encoding="utf-8")))
    }
    grown = {f: n for f, n in found.items() if n > HELPER_RAISES.get(f, 0)}
    assert grown == {}, "write raise CODE(fact); a helper may word the fact"


def test_the_helper_scan_counts_a_planted_helper_raise() -> None:
    assert helper_raises("raise _refuse('x')\nraise self._gone(e)\n") == 2
    assert helper_raises("raise CODE(_words('x'))\nraise exc\n") == 0

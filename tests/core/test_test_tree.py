"""The test tree mirrors the package and shares helpers only through helper modules
(issue 10 §8): no test module or conftest is imported by another module."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(p == "conftest" or p.startswith("test_") for p in parts)


def test_no_module_imports_a_test_module_or_a_conftest() -> None:
    files = sorted([*REPO.glob("tests/**/*.py"), *REPO.glob("scripts/*.py")])
    assert len(files) > 100
    found = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in files
        for name in _imported(path)
        if _is_test_module(name)
    ]
    assert found == [], "move shared helpers into tests/support/ or a helper module:\n" + "\n".join(
        found
    )


def test_the_rule_sees_a_cross_test_import(tmp_path: Path) -> None:
    """Negative control: the forms the rule must catch, and the helper forms it allows."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tests.agent.test_cli import fake\n"
        "import tests.review.conftest\n"
        "from tests.agent import test_admission\n"
        "from tests.support.layout import Layout\n"
        "from tests.agent.helpers import run\n"
    )
    flagged = [name for name in _imported(sample) if _is_test_module(name)]
    assert flagged == [
        "tests.agent.test_cli",
        "tests.agent.test_cli.fake",
        "tests.review.conftest",
        "tests.agent.test_admission",
    ]


def test_only_the_suite_s_own_conftest_sits_at_the_top() -> None:
    """Test modules live in folders named after the package they test."""
    top = sorted(p.name for p in (REPO / "tests").glob("*.py"))
    assert top == ["__init__.py", "conftest.py"]

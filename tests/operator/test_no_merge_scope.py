"""SPEC O-4: no merge capability exists anywhere in factory's code.

The scan parses every module of ``factory/`` and ``providers/`` and fails on any identifier
that names a merge, any string literal (docstrings aside) that is a merge endpoint
(``…/merge``, ``…/merges``), a ``merge`` git argument or a GraphQL ``mergePullRequest``.
Read-only queries that only name merges (``git merge-base``, unmerged index entries) are
no capability and pass.
The loopback forge separately fails any test that calls a merge endpoint.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BAD_STRING = re.compile(r"(^|/|\s)merges?($|/|\s|\?)|mergePullRequest", re.IGNORECASE)
# Read-only queries that only *name* merges are no capability.
_READ_ONLY = re.compile(r"merge_base|merge-base|unmerged", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def merge_mentions(source: str) -> list[str]:
    """Identifiers and non-docstring string literals of ``source`` that name a merge."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        names = [n for n in names if "merge" in n.lower() and not _READ_ONLY.search(n)]
        found += names
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and _BAD_STRING.search(node.value)
        ):
            found.append(node.value)
    return found


def test_no_module_names_a_merge() -> None:
    offenders = {}
    for folder in ("factory", "providers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            hits = merge_mentions(path.read_text(encoding="utf-8"))
            if hits:
                offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}


def test_the_scan_catches_a_merge_negative_control() -> None:
    planted = '''
def merge_pull(forge, n):
    """Docstrings may say merge."""
    return forge.put(f"/repos/o/r/pulls/{n}/merge")

def other(run):
    run(["git", "merge", "--ff-only", "x"])
    return "/repos/o/r/merges"
'''
    hits = merge_mentions(planted)
    assert "merge_pull" in hits
    assert "merge" in hits and "/repos/o/r/merges" in hits
    assert not any("Docstrings" in h for h in hits)
    assert merge_mentions('run(["git", "merge-base", "a", "b"])\nmerge_base = 1\n') == []

"""SPEC O-4: no merge capability exists anywhere in factory's code.

The scan parses every module of ``factory/`` and ``providers/`` and fails on any identifier
that names a merge, a string literal (docstrings aside) that is a merge endpoint
(``…/merge``, ``…/merges``), GraphQL's ``mergePullRequest`` or a ``git merge`` command
line, and an argv list holding a merging git subcommand (``merge``, ``merge-tree``, …).
Text that only *names* merges — ``git merge-base`` queries, the admission's
``merge-in-progress`` refusal — is no capability and passes.
The loopback forge separately fails any test that calls a merge endpoint.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A merge endpoint (``/pulls/N/merge``, ``/merges``), GraphQL's mutation, or a git command
# line written as one string.
_BAD_STRING = re.compile(
    r"/merges?($|/|\?)|mergePullRequest|\bgit\s+merge\b(?!-base)", re.IGNORECASE
)
# git subcommands that merge, as an argv element (``run_git(root, ["merge", ...])``).
_MERGE_ARGV = frozenset({"merge", "merge-tree", "merge-file", "merge-index", "merge-one-file"})
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
        if isinstance(node, ast.List | ast.Tuple):
            found += [
                e.value
                for e in node.elts
                if isinstance(e, ast.Constant)
                and isinstance(e.value, str)
                and e.value in _MERGE_ARGV
            ]
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
    assert merge_mentions('STATES = {"merge-in-progress": "merge"}\n') == []
    assert merge_mentions('run_git(root, ["merge", "--ff-only", "x"])\n') == ["merge"]

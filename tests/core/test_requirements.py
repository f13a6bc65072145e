"""``design/REQUIREMENTS.md`` (issue 10 §9): every SPEC id cited in a docstring has a row,
and every path a row names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INDEX = REPO / "design" / "REQUIREMENTS.md"

# An id, a range (A-1…A-8, P-2...P-4) or a section without numbered items (SPEC R).
_ID = re.compile(r"(?<![\w-])([A-Z])-(\d{1,2})(?:\s*(?:…|\.\.\.)\s*([A-Z])-(\d{1,2}))?(?![\w-])")
_SECTION = re.compile(r"\bSPEC ([RG])\b")
_ROW = re.compile(r"^\| ([A-Z](?:-\d+)?) \| [^|]+ \| ([^|]+) \| ([^|]+) \|$")


def cited(text: str) -> set[str]:
    """The requirement ids ``text`` cites (ranges expanded)."""
    ids = set(_SECTION.findall(text))
    for first, start, last, end in _ID.findall(text):
        if not last:
            ids.add(f"{first}-{start}")
        else:
            assert first == last, f"a range across families: {first}-{start}…{last}-{end}"
            ids.update(f"{first}-{n}" for n in range(int(start), int(end) + 1))
    return ids


def rows() -> dict[str, tuple[list[str], list[str]]]:
    """Each row's id with the paths of its code and tests cells."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for line in INDEX.read_text().splitlines():
        if m := _ROW.match(line):
            ident, code, tests = m.groups()
            assert ident not in found, f"{ident} has two rows"
            found[ident] = (re.findall(r"`([^`]+)`", code), re.findall(r"`([^`]+)`", tests))
    return found


def docstring_citations() -> dict[str, set[str]]:
    """Every cited id, with the files whose docstrings cite it."""
    files = [
        *REPO.glob("factory/**/*.py"),
        *REPO.glob("providers/**/*.py"),
        *REPO.glob("tests/**/*.py"),
        *REPO.glob("scripts/*.py"),
    ]
    where: dict[str, set[str]] = {}
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                for ident in cited(ast.get_docstring(node, clean=False) or ""):
                    where.setdefault(ident, set()).add(str(path.relative_to(REPO)))
    return where


def test_every_cited_id_has_a_row() -> None:
    where = docstring_citations()
    assert len(where) > 30  # the scan sees the citations at all
    missing = {ident: sorted(files)[:3] for ident, files in where.items() if ident not in rows()}
    assert missing == {}, f"add these ids to {INDEX.name}: {missing}"


def test_every_path_in_a_row_exists_and_each_built_row_names_code_and_tests() -> None:
    index = rows()
    assert len(index) >= 35
    for ident, (code, tests) in index.items():
        assert all((REPO / p).exists() for p in code + tests), (ident, code, tests)
        assert code and tests, f"{ident} names no code or no test"
        assert all(p.startswith("tests/") for p in tests), (ident, tests)


def test_the_citation_scan_reads_ids_ranges_and_sections() -> None:
    """Negative controls for the parser the two checks rely on."""
    assert cited("Admission (SPEC A-1): refusals") == {"A-1"}
    assert cited("(SPEC P-2…P-4) and A-9, A-10") == {"P-2", "P-3", "P-4", "A-9", "A-10"}
    assert cited("SPEC R, SPEC G, SPEC §4") == {"R", "G"}
    assert cited("UTF-8, sha-256, X-11a, the A-1b case, RFC 8785") == set()

"""Real temporary repositories and the real ``factory review`` CLI for review tests."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_factory
from tests.support.git import git, init_repo

PARSER = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))
BASE_FILES = {
    "README.md": "sample\n",
    "src/parser.py": PARSER,
    "docs/guide.md": "# guide\n",
    ".gitignore": "build/\n*.log\n",
}


@dataclass
class Ran:
    """One ``factory review`` run: exit code, the JSON on stdout, stderr text."""

    code: int
    doc: Any
    stderr: str
    stdout: bytes


def review(*args: str, cwd: Path, input: bytes = b"", env: dict[str, str] | None = None) -> Ran:
    proc: subprocess.CompletedProcess[bytes] = run_factory(
        ["review", *args], cwd=cwd, input=input, env=env
    )
    text = proc.stdout.decode()
    doc = None
    if text.strip().startswith("{"):
        doc = json.loads(text)
    return Ran(proc.returncode, doc, proc.stderr.decode(), proc.stdout)


def run_lens(
    repo: Path, *extra: str, timeout_ms: int = 20000, env: dict[str, str] | None = None
) -> Ran:
    """``factory review lens --lens reliability`` on ``repo``."""
    args = ("lens", "--cwd", str(repo), "--lens", "reliability", "--timeout-ms", str(timeout_ms))
    return review(*args, *extra, cwd=repo, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", dict(BASE_FILES))


def edit_parser(repo: Path, lines: int = 4, start: int = 1) -> None:
    """Change ``lines`` lines of src/parser.py (each counts 1 added + 1 deleted)."""
    path = repo / "src" / "parser.py"
    rows = path.read_text().splitlines(keepends=True)
    for i in range(start, start + lines * 3, 3):
        rows[i] = rows[i].replace("return x", "return -x")
    path.write_text("".join(rows))


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def reviewer_doc(findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"findings": findings or [], "evidence": ["read the whole diff of src/parser.py"]}


def store_root(repo: Path) -> Path:
    common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    return Path(common) / "factory" / "review" / "v1"


def snapshot_bytes(repo: Path) -> dict[str, bytes]:
    """Every file of the store, by relative path (to show that nothing changed)."""
    root = store_root(repo)
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "LOCK"
    }

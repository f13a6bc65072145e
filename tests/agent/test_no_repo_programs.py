"""factory's own git work never runs a program the repository names (issue 8 §3).

Each row plants one program — clean/smudge/process filter, textconv, external diff driver,
``diff.external``, fsmonitor, every hook (in ``hooks/`` and via ``core.hooksPath``) — so that
it writes a marker file if it ever runs. A whole four-call cycle (worker, REQUEST_CHANGES,
repair, APPROVE) and ``factory receipt verify`` (in-process and as the CLI) run over it:
the marker never appears. Twin: afterwards plain git runs the same program (the marker
appears), so the plant was live all along.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.agent.verify import verify
from tests.agent.conftest import Layout
from tests.agent.fakes import Step, write
from tests.agent.helpers import run
from tests.gitio.plant import ATTRIBUTES, PROGRAMS, TRIGGERS, marker
from tests.support.cli import run_factory
from tests.support.git import add_linked_worktree, init_repo


def attributed_layout(tmp_path: Path) -> Layout:
    repo = init_repo(
        tmp_path / "repo",
        {
            "README.md": "sample\n",
            "src/app.py": "def add(a, b):\n    return a - b\n",
            ".gitattributes": ATTRIBUTES,
            ".gitignore": "ignored.log\n",
        },
    )
    wt = add_linked_worktree(repo, tmp_path / "wt")
    out = tmp_path / "out"
    out.mkdir()
    return Layout(repo, wt, out)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
async def test_no_planted_program_runs_in_the_run_or_in_verify(tmp_path: Path, name: str) -> None:
    layout = attributed_layout(tmp_path)
    markers = tmp_path / "markers"
    markers.mkdir()
    PROGRAMS[name](layout.wt, markers)
    ran = await run(
        layout,
        [
            Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n")),
            Step(effect=write("tests/test_app.py", "assert True\n")),
        ],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="APPROVE")],
    )
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error
    assert verify(layout.receipt)["ok"] is True
    proc = run_factory(["receipt", "verify", str(layout.receipt)])
    assert proc.returncode == 0, proc.stderr
    assert not marker(markers, name).exists()
    TRIGGERS[name](layout.wt)
    assert marker(markers, name).exists(), "the planted program never ran even under plain git"

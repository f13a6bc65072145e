"""The live table of ``factory batch run`` at a real terminal (tmux), 80 and 120 columns:
one row per task, the bound labelled ``(not an ETA)``, nothing cut (a long cell folds onto
the next line, never an ellipsis), and no line wider than the terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.tmux import Terminal


@pytest.mark.parametrize("cols", [80, 120])
def test_the_live_table_fits_and_cuts_nothing(tmp_path: Path, cols: int) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 3)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "FACTORY_STATE_DIR") if k in os.environ}
    env.update({"TERM": "xterm-256color", "LC_ALL": "C.UTF-8"})
    command = (
        f"{sys.executable} -m factory batch run {tasks} --repo {repo} --out out --jobs 2"
        f" --rehearsal {DEMO} --min-free-mb 0 > report.json; echo batch-exit=$?"
    )
    with Terminal(tmp_path, cols=cols, rows=40, env=env) as term:
        term.type(command)
        running = term.wait_for("worker", timeout=120)
        term.wait_for("batch-exit=0", timeout=300)
        final = term.history()
        rows = term.history(joined=False)
    assert "(not an ETA)" in running.replace("\n", " ") or "(not an" in running
    for task in ("t00", "t01", "t02"):
        assert task in final
    assert final.count("completed") >= 3
    assert "APPROVE" in final  # the verdict of the last review stays shown beside the outcome
    assert "…" not in final  # nothing cut
    assert all(len(line) <= cols for line in rows.splitlines())

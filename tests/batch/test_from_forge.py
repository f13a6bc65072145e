"""``factory batch run --from-forge``: the tasks are the forge's open labelled issues, read
from the loopback forge EMULATION (tests/support/forge.py; not GitHub)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory
from tests.support.forge import LoopbackForge

REPO = "octo/widgets"


def _argv(repo: Path, out: Path, forge: LoopbackForge, *extra: str) -> list[str]:
    return ["batch", "run", "--from-forge", REPO, "--forge-url", forge.url, "--repo", str(repo),
            "--out", str(out), "--rehearsal", str(DEMO), "--progress", "jsonl",
            "--min-free-mb", "0", *extra]  # fmt: skip


def test_open_labelled_issues_become_the_tasks(tmp_path: Path, forge: LoopbackForge) -> None:
    repo, _ = repo_and_tasks(tmp_path, 0)
    forge.state.add_issue(REPO, 7, "Fix the date parser")
    forge.state.add_issue(REPO, 3, "Quote CSV fields")
    forge.state.add_issue(REPO, 9, "Not for factory", labels=("other",))
    env = {**os.environ, "GH_TOKEN": "forge-test-token"}
    proc = run_factory(_argv(repo, tmp_path / "out", forge), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert [t["id"] for t in report["tasks"]] == ["issue-3", "issue-7"]
    assert report["counts"] == {"completed": 2}
    before = len(forge.state.requests)
    again = run_factory(_argv(repo, tmp_path / "out", forge), env=env)  # resume: no forge read
    assert again.returncode == 0 and len(forge.state.requests) == before


def test_no_ready_issue_and_two_sources_are_refused(tmp_path: Path, forge: LoopbackForge) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    none = run_factory(_argv(repo, tmp_path / "o1", forge))
    assert none.returncode == 2 and b"factory: batch-tasks-invalid:" in none.stderr
    both = run_factory([*_argv(repo, tmp_path / "o2", forge)[:2], str(tasks),
                        *_argv(repo, tmp_path / "o2", forge)[2:]])  # fmt: skip
    assert both.returncode == 2 and b"factory: batch-tasks-source:" in both.stderr
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()

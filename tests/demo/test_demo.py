"""``factory demo``: the README's main job, end to end with the real pinned CLIs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from factory.demo.sample import FILES
from factory.rehearsal import load_scenario
from tests.support.cli import run_factory


@pytest.mark.realcli
def test_demo_runs_the_whole_cycle_and_says_it_is_a_rehearsal(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    proc = run_factory(["demo", "--dir", str(demo), "--progress", "jsonl"], timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    assert report["schema"] == "factory.demo-report/1"
    assert report["execution"].startswith("rehearsal: scripted loopback model")
    assert report["exitCode"] == 0
    assert report["verification"]["ok"] is True
    assert b"REHEARSAL" in proc.stderr
    receipt = json.loads((demo / "receipt.json").read_bytes())
    assert receipt["status"] == "completed"
    assert receipt["execution"] == report["execution"]
    assert [p["role"] for p in receipt["phases"]] == ["worker", "reviewer", "repair", "reviewer"]
    # The demo makes no worktree of its own: 'factory agent --repo' created it (issue 16).
    assert receipt["base"]["isolation"] == "factory-created-linked-git-worktree"
    creation = receipt["worktree_creation"]
    assert creation["path"] == str((demo / "worktree").resolve()) == receipt["worktree"]
    assert creation["branch"] == "demo/fix-median"
    assert creation["base_commit"] == receipt["base"]["commit"]
    # The fix and the test really landed in the worktree, through Claude Code's own tools,
    # and nothing was committed or staged.
    worktree = demo / "worktree"
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (worktree / "stats.py").read_text()
    assert (worktree / "test_stats.py").is_file()
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=worktree, capture_output=True, check=True
    )
    assert staged.stdout == b""
    # `factory receipt verify` agrees from the outside, and the candidate still matches.
    verify = run_factory(["receipt", "verify", str(demo / "receipt.json")])
    assert verify.returncode == 0, verify.stdout.decode()


def test_demo_refuses_an_existing_folder_and_touches_nothing(tmp_path: Path) -> None:
    demo = tmp_path / "taken"
    demo.mkdir()
    (demo / "keep.txt").write_text("mine\n")
    proc = run_factory(["demo", "--dir", str(demo)])
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert sorted(p.name for p in demo.iterdir()) == ["keep.txt"]


def test_demo_scenario_edits_match_the_sample_bug() -> None:
    """The scripted Edit must apply to the sample exactly once, or the demo cannot work."""
    scenario = load_scenario(
        Path(__file__).resolve().parents[2] / "factory" / "demo" / "scenario.json"
    )
    worker = scenario.invocations[0]
    edits = [c for c in worker.tool_calls if c.tool == "Edit"]
    assert len(edits) == 1
    assert FILES["stats.py"].count(edits[0].old_string) == 1
    assert [i.role for i in scenario.invocations] == ["worker", "reviewer", "repair", "reviewer"]

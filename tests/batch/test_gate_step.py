"""``factory batch run --test -- ARGV…``: the decision gate for every approved task's
candidate, after its run — evaluated and accepted, never published."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory

OK_TESTS = [sys.executable, "-c", "print('tests pass')"]


def _argv(tasks: Path, repo: Path, out: Path, *extra: str) -> list[str]:
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out)]
    return [*argv, "--rehearsal", str(DEMO), "--progress", "jsonl", "--min-free-mb", "0", *extra]


def test_the_gate_runs_for_each_approved_task_and_holds_without_a_review(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 2)
    out = tmp_path / "out"
    proc = run_factory(_argv(tasks, repo, out, "--test", "--", *OK_TESTS), timeout=600)
    report = json.loads(proc.stdout)
    # The rehearsal candidate's risk selects a review lens, and no review ran: held (exit 3).
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert report["counts"] == {"completed": 2}
    gates = [t["gate"] for t in report["tasks"]]
    assert all(g["state"] == "held" and g["run"].startswith("publish-") for g in gates)
    assert all("review-approved" in g["why"] for g in gates)
    assert (out / "gate.sqlite3").is_file()  # one gate store for the batch
    # Resuming runs no task again and resumes the same gate runs.
    again = run_factory(_argv(tasks, repo, out, "--test", "--", *OK_TESTS), timeout=600)
    assert again.returncode == 3
    assert [t["gate"]["run"] for t in json.loads(again.stdout)["tasks"]] == [
        g["run"] for g in gates
    ]
    # The negative control: without --test, no gate.
    plain = run_factory(_argv(tasks, repo, tmp_path / "plain"), timeout=600)
    assert plain.returncode == 0 and all(
        t["gate"] is None for t in json.loads(plain.stdout)["tasks"]
    )


@pytest.mark.parametrize("tail", [["--test"], ["--test", "--"], ["--test", "pytest"]])
def test_a_test_command_outside_its_form_is_refused(tmp_path: Path, tail: list[str]) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    proc = run_factory(_argv(tasks, repo, tmp_path / "out", *tail))
    assert proc.returncode == 2 and b"factory: batch-test-command:" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_with_review_every_approved_candidate_is_accepted(tmp_path: Path) -> None:
    """--review: the review transaction (scripted lenses on the rehearsal route, the tests as
    final evidence) then the gate, which accepts; nothing is pushed."""
    from tests.support.git import git

    repo, tasks = repo_and_tasks(tmp_path, 2)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "fetch", "-q", "origin")
    git(repo, "remote", "set-head", "origin", "main")
    before = git(bare, "for-each-ref")
    out = tmp_path / "out"
    argv = _argv(tasks, repo, out, "--review", "--test", "--", *OK_TESTS)
    proc = run_factory(argv, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert [t["gate"]["state"] for t in report["tasks"]] == ["accepted", "accepted"]
    assert git(bare, "for-each-ref") == before  # the gate is not authority: nothing pushed
    refused = run_factory(_argv(tasks, repo, tmp_path / "o2", "--review"))
    assert refused.returncode == 2 and b"factory: batch-test-command:" in refused.stderr

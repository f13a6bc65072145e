"""``factory batch run --review``: a review whose final evidence failed is resumed by the
next batch over the same candidate (its lineage waits in ``validating``, every lens already
judged), not wedged by spending a lens again; and what the decision gate did not accept is
named on stderr, not only in the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory
from tests.support.git import git

WRITES = [sys.executable, "-c", "open('junk.txt', 'w').write('x')"]  # changes the tree
OK = [sys.executable, "-c", "print('tests pass')"]


def _run(tasks: Path, repo: Path, out: Path, test: list[str]) -> tuple[int, dict[str, Any], str]:
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out), "--rehearsal"]
    argv += [str(DEMO), "--min-free-mb", "0", "--review", "--test", "--", *test]
    proc = run_factory(argv, timeout=600)
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


def test_a_failed_final_evidence_is_resumed_by_the_next_batch(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "fetch", "-q", "origin")
    git(repo, "remote", "set-head", "origin", "main")
    code, report, err = _run(tasks, repo, tmp_path / "o1", WRITES)
    gate = report["tasks"][0]["gate"]
    assert code == 4 and gate["state"] == "failed", err[-2000:]
    assert gate["why"].startswith("review: review-evidence-tree-changed: ")
    assert "factory batch: t00 decision gate failed: review: review-evidence-tree-changed" in err
    # The next batch resumes the lineage (state validating) with good evidence: approved,
    # then accepted by the decision gate.
    code, report, err = _run(tasks, repo, tmp_path / "o2", OK)
    assert code == 0, err[-3000:]
    assert report["tasks"][0]["gate"]["state"] == "accepted"
    assert "factory batch: t00 decision gate" not in err  # twin: nothing to explain


def test_review_without_the_remote_it_is_measured_against_is_refused_first(
    tmp_path: Path,
) -> None:
    """No ``origin``: every review would end held at pre-pr after its spend, so the batch is
    refused before any task runs (the twin with a remote is the test above)."""
    repo, tasks = repo_and_tasks(tmp_path, 1)
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(tmp_path / "o")]
    argv += ["--rehearsal", str(DEMO), "--min-free-mb", "0", "--review", "--test", "--", *OK]
    proc = run_factory(argv, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "factory: batch-review-boundary: " in err, err
    assert "remote origin is not configured" in err
    assert not (tmp_path / "o").exists()  # nothing created

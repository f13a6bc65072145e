"""``scripts/bench_worktree`` runs end to end on a tiny repository and removes what it made
(the benchmark itself, on 10,000 files, is run by hand)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def test_bench_worktree_runs_on_a_tiny_repository(repo_root: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(repo_root / "scripts" / "bench_worktree"), "--reps", "1", "--files", "60"],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema"] == "factory.bench-worktree/1" and report["files"] == 60
    assert report["git_worktree_add_median_s"] > 0 and report["factory_create_median_s"] > 0
    measured = report["factory_create_median_s"] / report["git_worktree_add_median_s"]
    assert abs(report["ratio"] - measured) <= 0.01 * measured  # medians are rounded
    assert list(tmp_path.iterdir()) == []

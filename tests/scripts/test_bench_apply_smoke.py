"""``scripts/bench_apply`` runs end to end on a tiny candidate and removes what it made (the
benchmark itself, on a 1,000-file candidate, is run by hand)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def test_bench_apply_runs_on_a_tiny_candidate(repo_root: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(repo_root / "scripts" / "bench_apply"), "--reps", "1", "--files", "20",
         "--base-files", "40"],
        capture_output=True, timeout=300, check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema"] == "factory.bench-apply/1" and report["changed_files"] == 20
    assert report["git_apply_write_tree_median_s"] > 0 and report["factory_apply_median_s"] > 0
    measured = report["factory_apply_median_s"] / report["git_apply_write_tree_median_s"]
    assert abs(report["ratio"] - measured) <= 0.01 * measured  # medians are rounded
    assert list(tmp_path.iterdir()) == []

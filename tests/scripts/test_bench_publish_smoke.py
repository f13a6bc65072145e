"""``scripts/bench_publish`` runs end to end, once per candidate, and each candidate stops
where its design says (the benchmark's figures come from running it by hand). A smoke
test: the benchmark broke silently once when the sample stopped making its worktree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def test_bench_publish_walks_each_candidate_to_its_stop(repo_root: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(repo_root / "scripts" / "bench_publish"), "--reps", "1"],
        capture_output=True,
        timeout=280,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    results = {r["candidate"]: r for r in json.loads(proc.stdout)["results"]}
    assert set(results) == {"docs", "demo", "demo-reviewed"}
    # low risk: no lens, the whole path to the intent
    assert results["docs"]["stopped"] is None and results["docs"]["intent_s"] is not None
    # medium risk without a review: the review gate denies, the gate holds, no intent
    assert results["demo"]["stopped"] == "gate-held" and results["demo"]["intent_s"] is None
    assert results["demo"]["stages"]["review-approved"] != "completed"
    # the same candidate after an approved review: the review gate allows, intent built
    reviewed = results["demo-reviewed"]
    assert reviewed["stopped"] is None and reviewed["stages"]["review-approved"] == "completed"
    assert reviewed["review_gate_s"] > 0 and reviewed["intent_s"] is not None
    assert list(tmp_path.iterdir()) == []

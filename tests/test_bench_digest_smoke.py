"""``scripts/bench_digest`` runs end to end on tiny trees (the benchmark itself is manual)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def test_bench_runs_on_tiny_trees(repo_root: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(repo_root / "scripts" / "bench_digest"),
            "--reps",
            "1",
            "--large-mb",
            "2",
            "--large-files",
            "8",
            "--small-files",
            "120",
            "--also-single",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    for tree in ("large", "small"):
        for command in ("factory", "floor", "factory-1w"):
            assert re.search(rf"^{tree}\s+{command}\s+\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+x", text, re.M)
        assert re.search(rf"^{tree}\s+digest\s+[0-9a-f]{{64}}$", text, re.M)
    assert list(tmp_path.iterdir()) == []  # the generated trees are removed

"""``scripts/bench_digest`` runs end to end on tiny trees (the benchmark itself is manual)."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest


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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_bench_removes_its_trees_when_terminated(
    repo_root: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    # Killed by a timeout or a closed terminal, the bench once left its trees behind
    # (~600 MB at full size): SIGTERM ended it without running its clean-up.
    proc = subprocess.Popen(
        [
            str(repo_root / "scripts" / "bench_digest"),
            *("--reps", "200", "--only", "small", "--small-files", "300"),
            *("--workdir", str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    seen = b""
    while b"rep 1/" not in seen:  # the tree exists and is being timed
        chunk = proc.stderr.readline()
        assert chunk, "the bench ended before timing anything"
        seen += chunk
    assert list(tmp_path.iterdir()) != []  # twin: the tree was there while it ran
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert list(tmp_path.iterdir()) == []

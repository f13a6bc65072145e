"""Helpers of the git-state tests: the git dir, a phase's mutation paths, an index refresh."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from factory.agent.receipt import PhaseRecord
from tests.support.git import git
from tests.support.layout import Layout


def git_dir(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip())


def evidence_paths(layout: Layout, phase: PhaseRecord) -> list[str]:
    (ref,) = [e for e in phase.evidence if e.role.endswith("-mutation-paths")]
    data = (layout.out / ref.path).read_bytes()
    return [p.decode() for p in data.split(b"\0")[:-1]]


def git_status_refreshing_the_index(wt: Path) -> None:
    """A worker's own plain `git status`/`git diff`: git rewrites the index's stat data."""
    index = git_dir(wt) / "index"
    before = index.read_bytes()
    os.utime(wt / "README.md")  # stat data changes, content does not
    subprocess.run(["git", "status"], cwd=wt, capture_output=True, check=True)
    subprocess.run(["git", "diff"], cwd=wt, capture_output=True, check=True)
    assert index.read_bytes() != before  # the refresh really wrote the index

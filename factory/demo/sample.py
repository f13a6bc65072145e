"""The demo's sample repository: a tiny Python module with a real bug.

``median()`` returns the upper middle value for an even number of inputs instead of the
mean of the two middle values. The repository is created with the git CLI (argv only,
``GIT_*`` scrubbed, a fixed demo identity for the one commit, so the user's own git
configuration and identity are neither needed nor used).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from factory.errors import Failure
from factory.gitio.run import GIT_ENV, GIT_OPTIONS, stderr_excerpt
from factory.proc.local import run_local

DEMO_TASK = (
    "Fix median() in stats.py: for an even number of values it must return the mean of "
    "the two middle values."
)

DEMO_BRANCH = "demo/fix-median"

FILES: dict[str, str] = {
    "README.md": "# stats\n\nSmall statistics helpers (factory demo sample).\n",
    ".gitignore": "__pycache__/\n*.pyc\n",
    "stats.py": (
        '"""Small statistics helpers."""\n'
        "\n"
        "\n"
        "def median(values: list[float]) -> float:\n"
        '    """The middle value of a non-empty list; the mean of the two middle values when\n'
        '    the length is even."""\n'
        "    ordered = sorted(values)\n"
        "    middle = len(ordered) // 2\n"
        "    return ordered[middle]\n"
    ),
}

_IDENTITY = {
    "GIT_AUTHOR_NAME": "factory demo",
    "GIT_AUTHOR_EMAIL": "demo@factory.invalid",
    "GIT_COMMITTER_NAME": "factory demo",
    "GIT_COMMITTER_EMAIL": "demo@factory.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class DemoSetupFailed(Failure):
    """The sample repository could not be created (exit 4)."""


DEMO_SETUP_FAILED = DemoSetupFailed.define(
    "demo-setup-failed", "fix what git reports, or pass another --dir", default=True
)


@dataclass(frozen=True, slots=True)
class Sample:
    """Where the demo's repository lives and where ``factory agent --repo`` will create
    the run's linked worktree (the demo never makes a worktree itself)."""

    repo: Path
    worktree: Path


def _git(cwd: Path, *args: str) -> None:
    # The read-only helpers' allow-listed env, plus a fixed identity and no user config:
    # these are the only git *writes* factory makes, into a folder it just claimed.
    extra = {**GIT_ENV, **_IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull}
    proc = run_local(["git", *GIT_OPTIONS, *args], cwd=cwd, env_extra=extra)
    if proc.returncode != 0:
        raise DemoSetupFailed(
            f"git {args[0]} failed while creating the sample repository (exit "
            f"{proc.returncode}): {stderr_excerpt(proc.stderr)}"
        )


def create_sample(root: Path) -> Sample:
    """Create ``root/repo`` (one commit); ``root/worktree`` is left for the run to create.

    ``root`` must exist and be empty (the caller claims it).

    Raises:
        DemoSetupFailed: git failed.
    """
    repo = root / "repo"
    worktree = root / "worktree"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for rel, text in FILES.items():
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-gpg-sign", "-m", "stats: median()")
    return Sample(repo=repo, worktree=worktree)

"""Run git read-only: argv only, scrubbed environment, no optional locks (SPEC A-1).

The child environment starts empty and copies only :data:`ALLOWED_ENV` from the caller;
every ``GIT_*`` variable the caller set is dropped, and the few git needs are set here
(``GIT_OPTIONAL_LOCKS=0``, ``GIT_TERMINAL_PROMPT=0``, and a temporary ``GIT_INDEX_FILE``
only when the caller asks for one).

Programs a repository can name are kept from running under our commands (issue 8 §3):
``-c core.fsmonitor=false`` (no fsmonitor hook or daemon), ``-c core.hooksPath=/dev/null``
(no hook can be found, should a command look for one), ``--no-pager``, no automatic
``gc``/maintenance. Filter drivers are named per repository, so :mod:`factory.gitio.config`
neutralises them in the environment of the commands that could run one; diffs always pass
``--no-ext-diff --no-textconv``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from factory.display import inert
from factory.errors import Failure

ALLOWED_ENV = ("PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER", "LOGNAME")
GIT_TIMEOUT_S = 300.0  # a local query that takes longer than this is treated as stuck

_BASE_ARGV = (
    "git",
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=false",
)


class GitFailure(Failure):
    """A local git command failed after admission (exit 4); the message keeps the first
    lines of git's own stderr, made inert."""


GIT_FAILED = GitFailure.define(
    "git-failed", "fix what git reports (git status shows the state) and rerun", default=True
)
GIT_NOT_FOUND = GitFailure.define("git-not-found", "install git and put it on PATH")
GIT_STUCK = GitFailure.define(
    "git-timeout", "check for a stuck git process or a slow disk, then rerun"
)
STDERR_LINES = 3  # lines of git's stderr kept in a git-failed message


def stderr_excerpt(stderr: bytes, lines: int = STDERR_LINES) -> str:
    """The first non-blank ``lines`` of git's stderr as one inert line (``|``-joined)."""
    text = stderr.decode("utf-8", "replace")
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][:lines]
    return inert(" | ".join(kept), limit=300) if kept else "no message"


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed child environment for git (``LC_ALL=C`` for stable output)."""
    env = {k: os.environ[k] for k in ALLOWED_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env["LC_ALL"] = "C"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env


def git_argv(args: Sequence[str]) -> list[str]:
    """The full argv of ``git ARGS`` with the options every factory git call carries."""
    return [*_BASE_ARGV, *args]


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    env_extra: Mapping[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
    what: str = "git query",
    stdin: bytes | None = None,
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` (``stdin`` bytes on its input) and return stdout bytes.

    Raises:
        GitFailure: git is missing, timed out, or exited with a code not in ``ok_codes``.
    """
    try:
        proc = subprocess.run(
            [*_BASE_ARGV, *args],
            cwd=cwd,
            env=git_env(env_extra),
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GIT_NOT_FOUND("git is not on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GIT_STUCK(f"{what} did not finish in {GIT_TIMEOUT_S:.0f} s") from exc
    if proc.returncode not in ok_codes:
        excerpt = stderr_excerpt(proc.stderr)
        raise GIT_FAILED(f"{what} failed (git exit {proc.returncode}): {excerpt}")
    return proc.stdout


def try_git(
    cwd: Path, args: Sequence[str], *, env_extra: Mapping[str, str] | None = None
) -> tuple[int, bytes]:
    """Like :func:`run_git` but returns ``(exit code, stdout)``; -1 when git cannot run."""
    try:
        proc = subprocess.run(
            [*_BASE_ARGV, *args],
            cwd=cwd,
            env=git_env(env_extra),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return -1, b""
    return proc.returncode, proc.stdout

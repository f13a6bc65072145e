"""Run git: argv only, scrubbed environment, no optional locks, no repository programs
where a flag can turn them off (SPEC A-1).

Every call goes through the one short-command wrapper (:func:`factory.proc.local.run_local`):
argv only, the allow-listed environment, stdin ``/dev/null``, bounded output, a deadline.
On top of that, every ``GIT_*`` variable of the caller is dropped (the allow-list has
none), ``LC_ALL=C``, ``GIT_OPTIONAL_LOCKS=0`` and ``GIT_TERMINAL_PROMPT=0`` are set, and
a temporary ``GIT_INDEX_FILE`` only when the caller asks for one. ``-c core.fsmonitor=false``
keeps a repository-configured fsmonitor program from running under our commands.

Most commands only read. The candidate tree is written with ``git add -A`` into a
*temporary* index and ``git write-tree``: that adds blob and tree objects to the object
database (content-addressed, unreferenced, invisible to ``status`` and to every ref), but
never touches the real index, HEAD, refs or the worktree's files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from factory.display import inert
from factory.errors import Failure
from factory.proc.local import (
    COMMAND_NOT_FOUND,
    COMMAND_TIMEOUT,
    CommandFailure,
    local_env,
    run_local,
)

GIT_TIMEOUT_S = 300.0  # a local git command that takes longer than this is treated as stuck

GIT_OPTIONS = (
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=false",
    # No automatic gc/maintenance: a detached daemon would outlive the command and, while
    # a supervised run is active, be swept with it (design/processes-and-providers.md).
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
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


GIT_ENV = {"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child environment for git: the local allow-list, ``LC_ALL=C`` for stable
    output, no optional locks, no prompts, then ``extra``."""
    return local_env({**GIT_ENV, **(extra or {})})


def _run(
    cwd: Path, args: Sequence[str], env_extra: Mapping[str, str] | None, what: str
) -> tuple[int, bytes, bytes]:
    try:
        done = run_local(
            ["git", *GIT_OPTIONS, *args],
            cwd=cwd,
            env_extra={**GIT_ENV, **(env_extra or {})},
            timeout_s=GIT_TIMEOUT_S,
        )
    except CommandFailure as exc:
        # An output past the cap is a git command that failed to do what we asked.
        code = {COMMAND_NOT_FOUND: GIT_NOT_FOUND, COMMAND_TIMEOUT: GIT_STUCK}.get(
            exc.spec, GIT_FAILED
        )
        raise code(f"{what}: {exc.fact}") from exc
    return done.returncode, done.stdout, done.stderr


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    env_extra: Mapping[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
    what: str = "git query",
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return stdout bytes.

    Raises:
        GitFailure: git is missing, timed out, or exited with a code not in ``ok_codes``.
    """
    returncode, stdout, stderr = _run(cwd, args, env_extra, what)
    if returncode not in ok_codes:
        raise GIT_FAILED(f"{what} failed (git exit {returncode}): {stderr_excerpt(stderr)}")
    return stdout


def try_git(cwd: Path, args: Sequence[str]) -> tuple[int, bytes]:
    """Like :func:`run_git` but returns ``(exit code, stdout)``; -1 when git cannot run."""
    try:
        returncode, stdout, _ = _run(cwd, args, None, "git query")
    except GitFailure:
        return -1, b""
    return returncode, stdout

"""Run git: argv only, scrubbed environment, no optional locks, no repository programs
where a flag can turn them off (SPEC A-1).

Every call goes through the one short-command wrapper (:func:`factory.proc.local.run_local`):
argv only, the allow-listed environment, bounded output, a deadline, stderr kept. On top
of that, every ``GIT_*`` variable of the caller is dropped (the allow-list has none),
``LC_ALL=C``, ``GIT_OPTIONAL_LOCKS=0`` and ``GIT_TERMINAL_PROMPT=0`` are set, and a
temporary ``GIT_INDEX_FILE`` only when the caller asks for one.

Programs a repository can name are kept from running under our commands (issue 8 §3):
``-c core.fsmonitor=false`` (no fsmonitor hook or daemon), ``-c core.hooksPath=/dev/null``
(no hook can be found, should a command look for one), ``--no-pager``, no automatic
``gc``/maintenance (a detached daemon would outlive the command). Filter drivers are named
per repository, so :mod:`factory.gitio.config` neutralises them in the environment of the
commands that could run one; diffs always pass ``--no-ext-diff --no-textconv``.
``-c core.untrackedCache=false``: a status never answers from an untracked cache stored in
an index (a submodule's, which no binding holds, can be built to hide a new file behind a
folder whose mtime was put back); git then reads the folders themselves.

Most commands only read. Trees are written into *private* indexes (``read-tree``,
``update-index``, ``write-tree``) and blobs with ``hash-object -w``: that adds
content-addressed, unreferenced objects to the object database, but never touches the real
index, HEAD, refs or the worktree's files.
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
    "--no-pager",
    "--no-replace-objects",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
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
# Objects are read as they are (issue 24 §1): ``--no-replace-objects`` (above) ignores
# ``refs/replace/*``; an empty graft file ignores ``info/grafts``. Shallow boundaries are
# kept (they are git's own record of what the clone holds).
GIT_ENV = {
    "LC_ALL": "C",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": "/dev/null",
}


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
    """The child environment for git: the local allow-list, ``LC_ALL=C`` for stable
    output, no optional locks, no prompts, then ``extra``."""
    return local_env({**GIT_ENV, **(extra or {})})


def _run(
    cwd: Path,
    args: Sequence[str],
    env_extra: Mapping[str, str] | None,
    what: str,
    stdin: bytes | None = None,
) -> tuple[int, bytes, bytes]:
    try:
        done = run_local(
            ["git", *GIT_OPTIONS, *args],
            cwd=cwd,
            env_extra={**GIT_ENV, **(env_extra or {})},
            timeout_s=GIT_TIMEOUT_S,
            stdin=stdin,
        )
    except CommandFailure as exc:
        # An output past the cap is a git command that failed to do what we asked.
        code = {COMMAND_NOT_FOUND: GIT_NOT_FOUND, COMMAND_TIMEOUT: GIT_STUCK}.get(
            exc.spec, GIT_FAILED
        )
        raise code(f"{what}: {exc.fact}") from exc
    return done.returncode, done.stdout, done.stderr


def git_argv(args: Sequence[str]) -> list[str]:
    """The full argv of ``git ARGS`` with the options every factory git call carries."""
    return ["git", *GIT_OPTIONS, *args]


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
    returncode, stdout, stderr = _run(cwd, args, env_extra, what, stdin)
    if returncode not in ok_codes:
        raise GIT_FAILED(f"{what} failed (git exit {returncode}): {stderr_excerpt(stderr)}")
    return stdout


def try_git(
    cwd: Path, args: Sequence[str], *, env_extra: Mapping[str, str] | None = None
) -> tuple[int, bytes]:
    """Like :func:`run_git` but returns ``(exit code, stdout)``; -1 when git cannot run."""
    try:
        returncode, stdout, _ = _run(cwd, args, env_extra, "git query")
    except GitFailure:
        return -1, b""
    return returncode, stdout

"""``factory agent``: one worker, one read-only review, at most one repair and a fresh final
review, in a clean linked git worktree (SPEC A-1…A-10).

This module only parses and checks flags and prints the outcome; :mod:`factory.cli.agent_exec`
turns them into a typed :class:`~factory.cli.agent_exec.AgentCall` and runs it (the demo and
``factory operator run`` call it directly), and the decisions live in :mod:`factory.agent`.
It is imported for ``factory --help``, so everything heavy is imported inside the handler.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Protocol

from factory.cli.framework import emit_stdout, say
from factory.config.commands import AGENT, help_epilog
from factory.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from factory.cli.framework import Subcommands

HELP = """\
Run a coding agent on TASK in the linked git worktree W and write a receipt to R.

  worker (claude) → candidate identity (code) → read-only reviewer (codex)
    APPROVE          → completed, exit 0
    REQUEST_CHANGES  → exactly one repair (claude) → a fresh reviewer → its verdict is final:
                       APPROVE → exit 0, REQUEST_CHANGES → rejected, exit 3

W must be a clean *linked* worktree ('git worktree add'). Or let factory create one:
--repo REPO (any folder inside a repository, a linked worktree or a bare repository)
creates a fresh linked worktree at --base (default: REPO's HEAD, pinned to a full commit
id) in --worktree-dir (default: a new folder beside the repository, named after the run)
on a new branch (--branch, default factory/run-<id>; --branch "" for a detached HEAD),
with the base's raw bytes — no hooks, no filters — and then admits it like any other.
The worktree stays after the run, whatever its outcome; the receipt names it, and
'factory worktree remove R' removes it when it is clean or holds exactly the candidate.
R and the evidence folder (default R.evidence) must not exist and must lie outside W and
its git directories.
stdout: the terminal receipt (canonical JSON); at a terminal, unless --json, a closing
block instead: outcome, verdicts, whether the receipt verified, where the receipt and the
worktree are, and the next commands (show, apply, remove, publish) as they work typed.
stderr: progress (no task text, no paths).
Exit codes: 0 completed, 2 refused before anything ran, 3 rejected, 4 typed failure,
130 interrupted (SIGINT/SIGTERM at any point; the receipt says what the run had reached),
1 internal error. If the receipt is written but stdout is not (a full device), exit 4
'output-write-failed': read R; do not rerun.
APPROVE grants no publication authority. With --rehearsal the real CLIs talk to a scripted
loopback model: that proves the control path, nothing about model judgement.
"""


def register(sub: Subcommands) -> None:
    p = sub.add_parser(
        "agent",
        help="run worker → review → one repair → review",
        description=HELP,
        epilog=help_epilog(AGENT),
    )
    add_worktree_flags(p)
    p.add_argument("--task", required=True, metavar="T", help="what the worker should do")
    p.add_argument("--out", required=True, metavar="R", help="receipt path (must not exist)")
    p.add_argument(
        "--timeout-ms",
        type=int,
        default=600_000,
        metavar="N",
        help="per provider invocation, 1000..1800000 (default 600000)",
    )
    p.add_argument("--evidence", metavar="DIR", help="evidence folder (default R.evidence)")
    p.add_argument(
        "--progress", choices=("human", "jsonl"), default="human", help="stderr progress format"
    )
    p.add_argument("--otel-endpoint", metavar="URL", help="http://127.0.0.1:PORT/v1/traces only")
    p.add_argument(
        "--rehearsal",
        metavar="SCENARIO",
        help="scripted loopback model scenario: a file, or demo (the one factory ships)",
    )
    p.add_argument(
        "--credentials",
        metavar="FILE",
        help="the api route: provider API keys from this private file (JSON or TOML)",
    )
    p.add_argument(
        "--credentials-env",
        metavar="NAME",
        help="the api route: provider API keys from this variable (a JSON document)",
    )
    add_choice_flags(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the receipt's JSON on stdout even at a terminal (the default elsewhere)",
    )
    p.set_defaults(handler=run)


def add_choice_flags(p: argparse.ArgumentParser) -> None:
    """The model choices (``factory.choices``): checked before anything runs, passed to the
    closed profiles, recorded in each phase's ``argv_shape``."""
    p.add_argument("--model", metavar="M", help="the worker's and repair's model (Claude Code)")
    p.add_argument("--reviewer-model", metavar="M", help="the reviewer's model (Codex)")
    p.add_argument(
        "--max-turns", type=int, metavar="N", help="the worker's turn cap (default 40; repair N/2)"
    )
    p.add_argument(
        "--max-budget-usd",
        metavar="USD",
        help="spend cap per worker or repair invocation (default 5; the reviewer has none)",
    )


def add_worktree_flags(p: argparse.ArgumentParser) -> None:
    """``--worktree W`` or ``--repo REPO [--base] [--worktree-dir] [--branch]`` (exactly one
    of the two; see :func:`check_worktree_flags`). ``factory operator run`` takes them too."""
    p.add_argument("--worktree", metavar="W", help="a clean linked git worktree")
    p.add_argument(
        "--repo", metavar="REPO", help="create a fresh linked worktree of this repository"
    )
    p.add_argument("--base", metavar="REV", help="with --repo: the base commit (default HEAD)")
    p.add_argument(
        "--worktree-dir", metavar="D", help="with --repo: the new folder (must not exist)"
    )
    p.add_argument(
        "--branch",
        metavar="NAME",
        help='with --repo: the new branch (default factory/run-<id>; "" detaches HEAD)',
    )


def check_endpoint(url: str | None) -> None:
    """Refuse a bad ``--otel-endpoint`` at parse time (exit 2), before anything runs."""
    if url is None:
        return
    from factory.agent.telemetry import parse_endpoint

    parse_endpoint(url)


REHEARSAL_BANNER = (
    "factory agent: REHEARSAL (--rehearsal): the real CLIs talk to a scripted loopback model; "
    "this proves the control path, nothing about model judgement."
)


def run(args: argparse.Namespace) -> int:
    # Human progress of a rehearsal reads exactly like a real run: say which it is, first
    # and last, so a scripted APPROVE is never mistaken for a model's; and say why a run
    # failed, not only "finished: failed". With --progress jsonl, stderr stays JSON lines.
    from factory.cli.agent_exec import AgentCall, execute
    from factory.cli.agent_signals import SIGNALS

    SIGNALS.install()
    human = args.progress == "human"
    shown: list[bool] = []  # the banner, once the run starts: never above a refusal

    def banner() -> None:
        if human and args.rehearsal is not None:
            say(REHEARSAL_BANNER)
            shown.append(True)

    exit_code, receipt = execute(AgentCall.from_args(args), started=banner)
    kept_in = f"the receipt {os.path.abspath(args.out)}" if receipt else None
    final = int(ExitCode.INTERRUPTED) if SIGNALS.seen else exit_code
    emit_stdout(_stdout(args, receipt, final), kept_in=kept_in)
    line = error_line(receipt) if human else None
    if line is not None:
        say(line)
    if shown:
        say(REHEARSAL_BANNER)
    return int(ExitCode.INTERRUPTED) if SIGNALS.seen else exit_code


def _stdout(args: argparse.Namespace, receipt: bytes, exit_code: int) -> bytes:
    """The receipt's JSON; at a terminal (without --json) the closing block instead."""
    from factory.cli.agent_ending import at_terminal, render

    if args.json or not receipt or not at_terminal():
        return receipt
    from pathlib import Path

    repo = Path(args.repo) if args.repo is not None else None
    return render(Path(os.path.abspath(args.out)), exit_code, repo)


def error_line(receipt: bytes) -> str | None:
    """``factory: <code>: <message>`` from a terminal receipt's typed error (its message
    carries no paths), so a failed run says why on stderr, not only in the receipt."""
    import json

    try:
        error = json.loads(receipt).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    # A provider's own words may reach the message: never let them drive the terminal.
    from factory.display import inert

    return inert(f"factory: {error.get('code')}: {error.get('message')}")


# The flags whose text a receipt records: each must be UTF-8 (refused with exit 2).
TEXT_FLAGS = {
    dest: "--" + dest.replace("_", "-")
    for dest in (
        "worktree",
        "repo",
        "base",
        "worktree_dir",
        "branch",
        "task",
        "out",
        "evidence",
        "rehearsal",
        "otel_endpoint",
    )
}


WORKTREE_OR_REPO = UsageError.define(
    "worktree-or-repo",
    "pass --worktree W (an existing linked worktree) or --repo REPO (factory creates one)",
)
CREATION_FLAG_NEEDS_REPO = UsageError.define(
    "creation-flag-needs-repo", "--base, --worktree-dir and --branch go with --repo only"
)
_CREATION_FLAGS = (("base", "--base"), ("worktree_dir", "--worktree-dir"), ("branch", "--branch"))


class WorktreeFlags(Protocol):
    """The flags that say where the run happens: parsed flags or an
    :class:`~factory.cli.agent_exec.AgentCall` (text or paths; ``""`` only from argv)."""

    @property
    def worktree(self) -> object: ...
    @property
    def repo(self) -> object: ...
    @property
    def base(self) -> object: ...
    @property
    def worktree_dir(self) -> object: ...
    @property
    def branch(self) -> object: ...


def check_worktree_flags(args: WorktreeFlags) -> None:
    """Exactly one of --worktree and --repo; the creation flags only with --repo (exit 2)."""
    from factory.cli.digest_cmd import EMPTY_PATH

    if (args.worktree is None) == (args.repo is None):
        raise WORKTREE_OR_REPO("give exactly one of --worktree and --repo")
    for dest, flag in (("repo", "--repo"), *_CREATION_FLAGS[:2]):
        if getattr(args, dest) == "":
            raise EMPTY_PATH(f"{flag} is empty")
    if args.repo is None:
        for dest, flag in _CREATION_FLAGS:
            if getattr(args, dest) is not None:
                raise CREATION_FLAG_NEEDS_REPO(f"{flag} was given with --worktree")

"""``factory runs [--repo R]`` and ``factory runs prune``: the runs factory knows of in a
repository, and removing those that are done with (issue 22).

The decisions live in :mod:`factory.runs.overview` and :mod:`factory.runs.prune`; this
module parses flags, prints the JSON document on stdout and a table on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.cli.framework import emit_stdout
from factory.errors import UsageError

if TYPE_CHECKING:
    from factory.runs.overview import RunsOverview
    from factory.runs.prune import PruneReport

NOT_A_REPOSITORY = UsageError.define(
    "runs-not-a-repository", "pass --repo a folder of a git repository (default: here)"
)

LIST_HELP = """\
List the runs factory knows of in the repository of --repo (default: the current folder):
each 'factory agent --repo' run's record (written before its worktree and branch existed)
and what git says is left of it — the worktree (still there?), the branch and its tip,
the receipt's status and verdict, whether the receipt still verifies, where its change is
(uncommitted, committed, ...), whether the change is kept elsewhere (a commit on another
branch, or staged in another checkout), and whether 'factory runs prune' would remove it
and why. Factory-looking worktrees and factory/run-* branches with no record are listed
too (recorded: false; never pruned).
stdout: factory.runs/1 JSON (at a terminal only with --json). stderr: the same as a
table. Exit 0.
"""

PRUNE_HELP = """\
Remove the worktrees and branches of the runs whose change is rejected, applied in another
checkout, or committed elsewhere — each worktree only under the checks of 'factory
worktree remove' (clean, exactly the candidate, or a commit of it), each branch only when
nothing would be lost with it (it points at the base, or its commits are reachable from
another ref, or they hold the candidate that is kept elsewhere). An approved change that is
nowhere else is never removed; neither is a run still going, one whose receipt does not
verify, or anything no factory record names. --dry-run says what would go.
stdout: factory.runs-prune/1 JSON (at a terminal only with --json). stderr: one line
per run. Exit 0.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("runs", help="the runs factory made in a repository", description=LIST_HELP)
    p.add_argument("--repo", metavar="R", default=".", help="a folder of the repository")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(handler=run_list)
    rsub = p.add_subparsers(title="runs commands", metavar="COMMAND", parser_class=type(p))
    pr = rsub.add_parser("prune", help="remove the runs that are done with", description=PRUNE_HELP)
    pr.add_argument("--repo", metavar="R", default=".", help="a folder of the repository")
    pr.add_argument(
        "--dry-run", action="store_true", help="say what would be removed, remove nothing"
    )
    pr.add_argument("--json", action="store_true", help=JSON_HELP)
    pr.set_defaults(handler=run_prune)


JSON_HELP = "print the JSON document on stdout also at a terminal (it is always printed to a pipe)"


def _emit(args: argparse.Namespace, data: bytes) -> None:
    """The document on stdout, unless stdout is a terminal and --json was not asked for:
    there the table on stderr is what a person reads (a JSON blob under it is noise)."""
    import sys

    if args.json or sys.stdout is None or not sys.stdout.isatty():
        emit_stdout(data)


def _common(repo: str) -> Path:
    from factory.runs.overview import common_dir_of

    common = common_dir_of(Path(repo))
    if common is None:
        where = "the current folder" if repo == "." else f"--repo {repo}"
        raise NOT_A_REPOSITORY(f"{where} is not inside a git repository")
    return common


def run_list(args: argparse.Namespace) -> int:
    from factory.cli.framework import refuse_non_utf8
    from factory.runs.overview import overview

    refuse_non_utf8(args, {"repo": "--repo"})
    found = overview(_common(args.repo))
    _table(found)
    _emit(args, found.canonical() + b"\n")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    from factory.cli.framework import refuse_non_utf8
    from factory.runs.prune import prune

    refuse_non_utf8(args, {"repo": "--repo"})
    report = prune(_common(args.repo), dry_run=args.dry_run)
    _pruned_lines(report)
    _emit(args, report.canonical() + b"\n")
    return 0


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[value]


def _table(found: RunsOverview) -> None:
    """One block per run on stderr (folders are long: a block reads better than a table)."""
    from factory.cli.framework import say
    from factory.display import inert

    if not found.runs:
        say(inert(f"factory runs: no run recorded in {found.repository}"))
        return
    say(inert(f"factory runs of {found.repository}: {len(found.runs)}"))
    for v in found.runs:
        outcome = "-" if v.status is None else f"{v.status} {v.verdict or ''}".strip()
        head = f"run {v.run_id}" if v.run_id else "no factory record"
        say(inert(f"{head}  {outcome}  verifies: {_yes(v.verifies)}"))
        rows = [
            ("worktree", (v.worktree or "-") + ("" if v.worktree_exists else " (gone)")),
            ("branch", (v.branch or "-") + ("" if v.branch_tip else " (gone)")),
            ("receipt", v.receipt or "-"),
            (
                "change",
                (v.change or "-") + (f"; kept: {v.kept_elsewhere}" if v.kept_elsewhere else ""),
            ),
            ("prune", ("yes: " if v.prune else "no: ") + v.why),
        ]
        for label, value in rows:
            say(inert(f"  {label:<9}{value}"))


def _pruned_lines(report: PruneReport) -> None:
    from factory.cli.framework import say
    from factory.display import inert

    dry = report.dry_run
    verb = "would remove" if dry else "removed"
    if not report.runs:
        say("factory runs prune: no run is done with (factory runs says why each stays)")
    for r in report.runs:
        gone = [
            what
            for what, done in (
                (f"worktree {r.worktree}", r.worktree_to_remove if dry else r.worktree_removed),
                (f"branch {r.branch}", r.branch_to_remove if dry else r.branch_removed),
            )
            if done
        ]
        head = f"run {r.run_id}: {verb} " + (" and ".join(gone) if gone else "nothing")
        tail = f" ({r.why})" + (f"; kept: {r.kept}" if r.kept else "")
        say(inert(head + tail))

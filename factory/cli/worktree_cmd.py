"""``factory worktree remove OUT``: remove the linked worktree a run created (issue 16).

The decisions live in :mod:`factory.agent.worktree_remove`; this module parses the flag
and prints the ``factory.worktree-removal/1`` document.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.cli.framework import emit_stdout, say
from factory.display import inert

if TYPE_CHECKING:
    from factory.agent.worktree_remove import WorktreeRemoval

REMOVE_HELP = """\
Remove the linked worktree that 'factory agent --repo' created for the run whose receipt
is OUT — only when it is clean (HEAD still the base, on the branch the run created, no
change), holds exactly the candidate the receipt judged, or commits it (HEAD, on the
run's branch, is a commit of exactly that candidate on the base). Anything else is
refused (exit 2) and nothing is touched. Ignored files go with the folder, as with 'git
worktree remove'; the branch is kept (so a commit of the candidate is not lost); no other
worktree registration is pruned, repaired or unlocked. factory never removes a worktree
unless asked this way. stderr says where the change lives afterwards.
stdout: a factory.worktree-removal/1 JSON object. Exit 0 removed, 2 refused, 4 git failed.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("worktree", help="remove a worktree factory created")
    wsub = p.add_subparsers(title="worktree commands", metavar="COMMAND", parser_class=type(p))
    r = wsub.add_parser(
        "remove", help="remove the worktree a receipt's run created", description=REMOVE_HELP
    )
    r.add_argument("receipt", metavar="OUT", help="the receipt of a 'factory agent --repo' run")
    r.set_defaults(handler=run_remove)


def run_remove(args: argparse.Namespace) -> int:
    from factory.agent.worktree_remove import remove_created_worktree

    removal = remove_created_worktree(Path(args.receipt))
    emit_stdout(removal.canonical() + b"\n")
    line = where_the_change_lives(removal, Path(args.receipt))
    if line is not None:
        say(inert(line))
    return 0


def where_the_change_lives(removal: WorktreeRemoval, receipt: Path) -> str | None:
    """One stderr line after a removal: where the run's change is now."""
    from factory.usercmd import factory_command

    if removal.state == "committed":
        return (
            f"factory: worktree removed; the change lives on in commit "
            f"{(removal.committed_as or '')[:12]} on branch {removal.branch_kept} (kept)"
        )
    if removal.state == "candidate":
        apply = factory_command("receipt", "apply", receipt)
        return (
            "factory: worktree removed; the change was not committed: its only copy is the "
            f"receipt's evidence patch — take it into a checkout with: {apply}"
        )
    return None

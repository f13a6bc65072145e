"""How ``factory agent`` ends at a terminal: like the demo (issue 22).

When stdout is a terminal (and ``--json`` was not given), the last thing a person sees is
a closing block instead of the receipt's JSON: whether it was a rehearsal, the outcome and
the verdicts, whether the receipt verified and where the change is, where the receipt and
the worktree are, and the next commands — each in the form that works as typed where the
user stands (:mod:`factory.usercmd`): show the receipt, take the change into a checkout
(``receipt apply``), remove the worktree the run created, and where a pull request starts.
A non-terminal stdout, or ``--json``, keeps the receipt's canonical JSON as the only stdout.

The block is built by :func:`ending_lines` (rich text; every string from the receipt or a
path through the display sanitiser) from the receipt, its verification and the paths.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from factory.agent.receipt import AgentReceipt
from factory.demo.screen import (
    COMMAND_STYLE,
    OUTCOME_STYLE,
    REHEARSAL_LINE,
    verdict_line,
    verification_line,
)
from factory.display import inert
from factory.usercmd import factory_command, shown_path


@dataclass(frozen=True, slots=True)
class Ending:
    """What the closing block is about: the receipt path, the exit code, and the checkout
    ``--repo`` named (``None`` for ``--worktree`` runs or a bare repository)."""

    receipt: Path
    exit_code: int
    checkout: Path | None


def next_commands(receipt: AgentReceipt | None, ending: Ending) -> list[tuple[str, str]]:
    """``(what it does, command)`` for the commands that make sense after this run."""
    out = [("read it", factory_command("receipt", "show", ending.receipt))]
    if receipt is None:
        return out
    if receipt.status == "completed":
        to: list[str | Path] = [] if ending.checkout is None else ["--to", ending.checkout]
        out.append(("take the change", factory_command("receipt", "apply", ending.receipt, *to)))
    if receipt.worktree_creation is not None:
        out.append(("remove the worktree", factory_command("worktree", "remove", ending.receipt)))
    if receipt.status == "completed" and receipt.route != "rehearsal":
        out.append(("open a pull request", factory_command("publish", "--help")))
    return out


def _line(label: str, value: str, style: str = "") -> Text:
    return Text.assemble((f"{label:<11}", "bold"), (inert(value), style))


def ending_lines(
    receipt: AgentReceipt | None,
    report: Mapping[str, Any] | None,
    failed: list[str],
    ending: Ending,
) -> list[Text]:
    """The closing block, line by line (see the module docstring)."""
    from factory.agent.representation import describe

    lines: list[Text] = []
    if receipt is not None and receipt.route == "rehearsal":
        lines.append(Text(REHEARSAL_LINE, style="bold black on yellow"))
    if receipt is None:
        lines.append(
            Text(f"outcome    no receipt could be read (exit {ending.exit_code})", "bold red")
        )
    else:
        status = f"{receipt.status} (exit {ending.exit_code})"
        lines.append(_line("outcome", status, OUTCOME_STYLE.get(receipt.status, "")))
        if receipt.error is not None:
            lines.append(_line("error", f"{receipt.error.code}: {receipt.error.message}"))
        lines.append(_line("verdicts", verdict_line(receipt)))
    if report is not None:
        text, style = verification_line(report, failed)
        lines.append(_line("verified", text, style))
        note = describe(report.get("representation"))
        if note is not None:
            lines.append(_line("change", note.sentence, "bold red" if note.bad else ""))
    lines.append(_line("receipt", shown_path(ending.receipt)))
    if receipt is not None and receipt.worktree_creation is not None:
        made = receipt.worktree_creation
        where = shown_path(made.path)
        branch = f" (branch {made.branch})" if made.branch else " (detached HEAD)"
        lines.append(_line("worktree", where + branch))
    lines.append(Text("next:", style="bold"))
    for what, command in next_commands(receipt, ending):
        lines.append(Text(f"  # {what}", style="dim"))
        lines.append(Text("  " + inert(command), style=COMMAND_STYLE))
    return lines


def checkout_of(repo: Path | None) -> Path | None:
    """The top folder of the checkout ``--repo`` lies in (``None``: bare, or no ``--repo``)."""
    if repo is None:
        return None
    from factory.gitio.apply import locate_checkout

    found = locate_checkout(repo)
    return None if found is None else found.root


def render(receipt_path: Path, exit_code: int, repo: Path | None) -> bytes:
    """Verify the receipt and render the closing block as terminal bytes (colours on)."""
    from factory.agent.verify import failed_checks, load_receipt, verify
    from factory.errors import FactoryError

    model, report, failed = None, None, []
    try:
        checked = verify(receipt_path)
        model, _ = load_receipt(receipt_path)
        report = checked.to_json_value()
        failed = [] if checked.ok else failed_checks(checked)
    except FactoryError:
        pass
    ending = Ending(receipt=receipt_path, exit_code=exit_code, checkout=checkout_of(repo))
    width = shutil.get_terminal_size((100, 40)).columns
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, soft_wrap=False)
    console.print()
    for line in ending_lines(model, report, failed, ending):
        console.print(line, soft_wrap=line.style == COMMAND_STYLE)
    return buf.getvalue().encode("utf-8")


def at_terminal() -> bool:
    """Whether stdout is a terminal (the closing block replaces the JSON there)."""
    import sys

    try:
        return sys.stdout is not None and os.isatty(sys.stdout.fileno())
    except (OSError, ValueError):
        return False

"""The demo's last screen: the human outcome, then the next commands (issue 9 §1).

The demo used to end on its JSON report, so the readable receipt scrolled away. The last
thing a newcomer sees is now this block: that it was a REHEARSAL, the outcome and the
verdicts, whether the receipt verified, where the receipt and the report are, and the next
commands — each one in the form that works as typed where the user stands
(:mod:`factory.usercmd`). Prose wraps at words; a command longer than a line is left for
the terminal to wrap, never broken with an indent, so it pastes whole.

Pure: :func:`outcome_lines` turns a receipt, its verification and the paths into rich
:class:`~rich.text.Text` lines; every string from the receipt or a path goes through the
display sanitiser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from factory.agent.receipt import AgentReceipt
from factory.display import inert
from factory.usercmd import factory_command, shown_path

#: The style of a "next" command line (the printer leaves those unwrapped).
COMMAND_STYLE = "bold cyan"
REHEARSAL_LINE = (
    "REHEARSAL: a scripted loopback model answered the real Claude Code and Codex CLIs; "
    "this proves the control path, nothing about model judgement."
)
OUTCOME_STYLE = {
    "completed": "bold green",
    "rejected": "bold yellow",
    "failed": "bold red",
    "interrupted": "bold magenta",
}
_PHASE_LABEL = {
    "worker": "worker",
    "initial_review": "review",
    "repair": "repair",
    "final_review": "fresh review",
}


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """Where the demo put its files."""

    root: Path
    receipt: Path
    report: Path
    html: Path


def verdict_line(receipt: AgentReceipt) -> str:
    """``worker ok → review REQUEST_CHANGES → repair ok → fresh review APPROVE``."""
    steps = [f"{_PHASE_LABEL[p.phase]} {p.outcome}" for p in receipt.phases]
    return " → ".join(steps) if steps else "no phase ran"


def verification_line(report: Mapping[str, Any], failed: list[str]) -> tuple[str, str]:
    """The verification result in one line and its style."""
    if report.get("ok") is True:
        evidence = len(report.get("evidence", []))
        matches = report.get("candidate", {}).get("still_matches")
        tail = ", candidate still in the worktree" if matches else ""
        return f"yes: revision, canonical bytes, {evidence} evidence files{tail}", "green"
    return "NO: " + "; ".join(failed), "bold red"


def next_commands(paths: DemoPaths) -> list[str]:
    """The commands a newcomer runs next, as typed where they stand."""
    return [
        factory_command("receipt", "show", paths.receipt),
        factory_command("receipt", "show", paths.receipt, "--diff"),
        factory_command("receipt", "show", paths.receipt, "--html", paths.html),
        factory_command("receipt", "verify", paths.receipt),
    ]


def outcome_lines(
    receipt: AgentReceipt | None,
    exit_code: int,
    report: Mapping[str, Any] | None,
    failed: list[str],
    paths: DemoPaths,
) -> list[Text]:
    """The closing block, line by line (see the module docstring)."""
    lines = [Text(REHEARSAL_LINE, style="bold black on yellow")]
    if receipt is None:
        lines.append(Text(f"outcome    no receipt could be read (exit {exit_code})", "bold red"))
    else:
        status = receipt.status
        outcome = Text.assemble(
            ("outcome    ", "bold"),
            (f"{status} (exit {exit_code})", OUTCOME_STYLE.get(status, "")),
        )
        lines.append(outcome)
        if receipt.error is not None:
            lines.append(Text(inert(f"error      {receipt.error.code}: {receipt.error.message}")))
        lines.append(Text.assemble(("verdicts   ", "bold"), inert(verdict_line(receipt))))
    if report is not None:
        text, style = verification_line(report, failed)
        lines.append(Text.assemble(("verified   ", "bold"), (inert(text), style)))
    lines.append(Text.assemble(("receipt    ", "bold"), inert(shown_path(paths.receipt))))
    lines.append(Text.assemble(("report     ", "bold"), inert(shown_path(paths.report))))
    lines.append(Text("next:", style="bold"))
    lines.extend(Text("  " + inert(cmd), style=COMMAND_STYLE) for cmd in next_commands(paths))
    return lines

"""The last screen of ``factory demo --pipeline``: what each hand-off showed, where the
rehearsal stopped and why, and what a real run does next (issue 15).

Pure: :func:`pipeline_lines` turns the walk (:class:`factory.pipeline.demo.Walk`) into rich
:class:`~rich.text.Text` lines; every string from a receipt, a record or a path goes
through the display sanitiser.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from factory.demo.screen import COMMAND_STYLE, REHEARSAL_LINE
from factory.display import inert
from factory.pipeline.demo import Walk, expected_end
from factory.usercmd import factory_command, shown_path

#: What a real run types next, with the user's own logins (placeholders in capitals).
REAL_RUN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("run the agent on the subscription route (Claude Code and Codex logged in):",
     ("agent", "--worktree", "WT", "--task", "TASK", "--out", "R.json")),
    ("when its risk tier selects lenses: review start, then each lens, then finalize:",
     ("review", "start", "--cwd", "WT")),
    ("the gate (publish-candidate), then you type the revision and your passphrase:",
     ("publish", "--receipt", "R.json", "--repository", "YOU/REPO", "--remote", "origin",
      "--private-key", "P", "--public-key", "Q", "--ledger", "DIR", "--out", "OUT.json",
      "--test", "--", "make", "test")),
    ("check the whole chain offline:",
     ("operator", "verify", "OUT.json", "--deep", "--public-key", "Q")),
)  # fmt: skip


def _label(name: str, value: str, style: str = "") -> Text:
    return Text.assemble((f"{name:<11}", "bold"), (inert(value), style))


def _gate_line(gate: dict[str, Any] | None) -> Text:
    if gate is None:
        return _label("gate", "did not run", "bold red")
    stages = ", ".join(f"{k} {v}" for k, v in gate.get("stages", {}).items())
    done = "accepted, complete" if gate.get("completed") else "NOT complete"
    text = f"run {gate.get('run')} ({gate.get('scenario')}) {done}: {stages}"
    return _label("gate", text, "green" if gate.get("completed") else "bold red")


def _operator_line(walk: Walk) -> Text:
    op = walk.operator
    if op is None:
        return _label("operator", "did not run", "bold red")
    refusal = op.get("refusal") or {}
    if refusal.get("code") == "rehearsal-receipt":
        text = (
            f"REFUSED at {refusal.get('stage')}: rehearsal-receipt — a rehearsal (scripted "
            "model) is never published; no prompt, no key, no forge, no grant"
        )
        return _label("operator", text, "bold yellow")
    text = f"{op.get('status')}: {refusal.get('stage')}/{refusal.get('code')}"
    return _label("operator", text, "bold red")


def _chain_line(walk: Walk) -> Text:
    chain = (walk.chain or {}).get("chain")
    if walk.chain is None or chain is None:
        return _label("chain", "not verified", "bold red")
    if walk.chain.get("ok"):
        text = (
            "verified (operator verify --deep): agent receipt re-verified, gate runpack "
            "re-hashed and replayed, bound to this candidate tree"
        )
        return _label("chain", text, "green")
    return _label("chain", "NO: " + "; ".join(chain.get("problems", [])), "bold red")


def pipeline_lines(walk: Walk, agent_line: str) -> list[Text]:
    """The closing block, line by line (see the module docstring)."""
    lines = [Text(REHEARSAL_LINE, style="bold black on yellow"), _label("agent", agent_line)]
    review = walk.review
    if walk.review_problem is not None:
        lines.append(_label("review", walk.review_problem, "bold red"))
    elif review:
        lenses = ", ".join(review.get("lenses", [])) or "none selected"
        text = f"lineage {review.get('lineage')} {review.get('state')} (lenses: {lenses}; scripted)"
        lines.append(_label("review", text))
    if walk.review_problem is None:
        lines += [_gate_line(walk.gate), _operator_line(walk), _chain_line(walk)]
    if walk.diagnostic and not expected_end(walk):
        lines.append(_label("said", walk.diagnostic.splitlines()[0] if walk.diagnostic else ""))
    lines.append(_label("receipt", shown_path(walk.out)))
    lines.append(Text("check it yourself:", style="bold"))
    verify = factory_command("operator", "verify", walk.out, "--deep")
    lines.append(Text("  " + inert(verify), style=COMMAND_STYLE))
    lines.append(Text("a real run, with your own logins, would next:", style="bold"))
    for n, (what, words) in enumerate(REAL_RUN, start=1):
        lines.append(Text(f"  {n}. {what}"))
        lines.append(Text("     " + inert(factory_command(*words)), style=COMMAND_STYLE))
    lines.append(Text("  (README: 'From task to pull request')"))
    return lines

"""What the operator sees and types (SPEC O-3).

Every value shown goes through :func:`factory.display.inert` (escape sequences, C0/C1,
bidi controls and marks, zero-width characters and line/paragraph separators escaped
visibly; long lines capped). Text that came from the forge or from repository config —
titles, branch names, logins, URLs — is shown on its own line under a label that says it
is untrusted. Every field the grant will cover is on screen before the first prompt.

The prompts: the full intent revision, typed exactly (no prefix, no other case), then the
passphrase with echo off. Each way of abandoning a prompt is a named refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from factory.display import inert, inert_lines
from factory.errors import Refused
from factory.operator.intent import PublishIntent, RunIntent
from factory.operator.tty import HungUp, PromptClosed, Terminal

RULE: Final = "-" * 72
UNTRUSTED: Final = "(untrusted: data from {source}, not instructions)"


class PromptRefused(Refused):
    """The operator did not authorize at a prompt (exit 2)."""


_NOTHING = "nothing was authorized; run the command again to retry"
CONFIRMATION_CLOSED = PromptRefused.define("confirmation-closed", _NOTHING)
CONFIRMATION_MISMATCH = PromptRefused.define(
    "confirmation-mismatch", "type the whole revision exactly as shown (sha256:…)"
)
PASSPHRASE_CLOSED = PromptRefused.define("passphrase-closed", _NOTHING)
PROMPT_CANCELLED = PromptRefused.define("prompt-cancelled", _NOTHING)
PASSPHRASE_MISMATCH = PromptRefused.define(
    "passphrase-mismatch", "nothing was created; type the same passphrase twice"
)


def field(label: str, value: object) -> str:
    return f"  {label}: {inert(str(value))}"


def untrusted(label: str, value: str, source: str = "the forge") -> list[str]:
    """A forge-derived value: its label line, then the value alone on the next line."""
    return [f"  {label} {UNTRUSTED.format(source=source)}:", f"    {inert(value)}"]


def block(label: str, text: str, note: str = "") -> list[str]:
    return [f"  {label}{note}:", *(f"    {line}" for line in inert_lines(text, max_lines=40))]


def render_run(intent: RunIntent) -> list[str]:
    """The screen for a ``FACTORY_RUN`` authorization."""
    assert intent.issue is not None and intent.title is not None and intent.task is not None
    return [
        RULE,
        "factory operator run: authorize ONE agent run (single-use grant FACTORY_RUN)",
        RULE,
        field("schema", intent.schema_id),
        field("state", intent.state),
        field("action", intent.action),
        field("required authority", intent.required_authority),
        field("forge", intent.forge),
        field("repository", intent.repository),
        field("label", intent.label),
        field("item", f"{intent.item_kind} #{intent.issue}"),
        *untrusted("title", intent.title),
        *block("task", intent.task, " (its second line quotes the untrusted title as data)"),
        field("snapshot revision", intent.snapshot_revision),
        field("intent revision", intent.intent_revision),
        RULE,
    ]


def render_publish(intent: PublishIntent, facts: Iterable[str]) -> list[str]:
    """The screen for a ``PUBLISH_CANDIDATE`` authorization; ``facts`` are observation
    lines (already inert) such as the commit id and what each step will do."""
    c, r = intent.candidate, intent.receipt
    return [
        RULE,
        "factory operator publish: authorize ONE publication (single-use grant PUBLISH_CANDIDATE)",
        RULE,
        field("schema", intent.schema_id),
        field("state", intent.state),
        field("operations", ", ".join(intent.operations) + " (never merge)"),
        field("effect until authorized", intent.effect),
        field("forge", intent.forge),
        field("repository", intent.repository),
        field("issue", f"#{intent.issue} (Closes #{intent.issue})" if intent.issue else "none"),
        field("agent receipt", r.path),
        field("agent receipt revision", r.revision),
        field("agent receipt sha256", r.sha256),
        field("candidate identity", c.identity),
        field("base commit (parent)", c.base_commit),
        field("candidate tree", c.candidate_tree),
        field("changed files", c.files),
        field("remote", intent.remote.name),
        *untrusted("remote URL", intent.remote.url, "git config"),
        field("branch", intent.branch),
        *untrusted("pull request base", intent.pull_request.base),
        *untrusted(
            "commit author",
            f"{intent.commit.author_name} <{intent.commit.author_email}>",
            "git config",
        ),
        field("commit date", intent.commit.date),
        *block("commit message", intent.commit.message),
        field("pull request title", intent.pull_request.title),
        *block("pull request body", intent.pull_request.body),
        *gate_lines(intent),
        *facts,
        field("intent revision", intent.intent_revision),
        RULE,
    ]


def gate_lines(intent: PublishIntent) -> list[str]:
    """The decision gate the publication stands on (the grant covers its run and head)."""
    gate = intent.gate
    if gate is None:
        return [field("decision gate", "none")]
    lines = [
        field("decision gate run", f"{gate.run} (scenario {gate.scenario}, seq {gate.seq})"),
        field("gate scenario spec hash", gate.spec_hash),
        field("gate head (accepted)", gate.head),
    ]
    if gate.review is None:
        lines.append(field("review receipt", "none relied on (no review lens was needed)"))
    else:
        rv = gate.review
        lines.append(field("review receipt", f"lineage {rv.lineage_id} ({rv.terminal_state})"))
        lines.append(field("review receipt digest", rv.digest))
    return lines


def show(terminal: Terminal, lines: Iterable[str]) -> None:
    terminal.write("".join(f"{line}\n" for line in lines))


def confirm(terminal: Terminal, revision: str) -> None:
    """The operator must type ``revision`` exactly.

    Raises:
        PromptRefused: ``confirmation-closed`` (Ctrl-D), ``prompt-cancelled`` (Ctrl-C),
            ``confirmation-mismatch``.
    """
    try:
        typed = terminal.read_line("Type the full intent revision to authorize it: ")
    except PromptClosed:
        raise CONFIRMATION_CLOSED("the terminal closed at the revision prompt") from None
    except HungUp:
        raise  # the terminal is gone: an interruption, not the operator's answer
    except KeyboardInterrupt:
        raise PROMPT_CANCELLED("cancelled at the revision prompt") from None
    if typed.strip() != revision:
        raise CONFIRMATION_MISMATCH("the typed revision is not exactly the intent revision shown")


def ask_passphrase(terminal: Terminal, prompt: str = "Passphrase (not shown): ") -> bytes:
    """One hidden passphrase line.

    Raises:
        PromptRefused: ``passphrase-closed`` (Ctrl-D), ``prompt-cancelled`` (Ctrl-C).
    """
    try:
        return terminal.read_secret(prompt)
    except PromptClosed:
        raise PASSPHRASE_CLOSED("the terminal closed at the passphrase prompt") from None
    except HungUp:
        raise
    except KeyboardInterrupt:
        raise PROMPT_CANCELLED("cancelled at the passphrase prompt") from None

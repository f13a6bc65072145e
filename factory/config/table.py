"""The one table from ``factory.toml`` keys to the argparse dests they feed.

Pure data, standard library only (the caps' ceilings equal :mod:`factory.choices`'
defaults: a test holds them equal). The CLI imports it only for a command that has a key
(:data:`factory.config.commands.CONFIGURED`).

A key is ``section.name``; it feeds exactly one dest, in each of the commands listed. A
(command, dest) pair is fed by at most one key (``tests/config/test_table.py``). Only keys
marked ``repository=True`` may come from a repository's ``factory.toml``: the repository may
be hostile, so it may choose models and timeouts (and only *lower* the turn and spend caps),
never a key path, the ledger, a forge, a remote, or a program to run. See ``design/config.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factory.config.commands import (
    AGENT,
    BATCH_RUN,
    OP_PLAN,
    OP_PUBLISH,
    OP_RUN,
    PUBLISH,
    REVIEW_LENS,
    WORKER,
)

Kind = Literal["str", "int", "float", "usd", "path", "argv"]


@dataclass(frozen=True, slots=True)
class Binding:
    """One config key.

    Attributes:
        section, name: the key is ``name`` in table ``[section]``.
        dest: the argparse dest it feeds (``flag`` on the command line).
        commands: the commands (words after ``factory``) that have that dest.
        kind: the TOML value it takes; ``path`` is a string resolved against the file's
            folder (``~`` expanded); ``usd`` a number or a string of dollars; ``argv`` a
            list of strings (a program and its arguments, never a shell string).
        repository: a repository's ``factory.toml`` may set it.
        ceiling: from a repository's file, the highest value accepted (the built-in
            default): a repository may tighten a cap, never loosen it.
    """

    section: str
    name: str
    dest: str
    flag: str
    commands: tuple[str, ...]
    kind: Kind
    help: str
    repository: bool = False
    ceiling: int | str | None = None
    cap: bool = False

    @property
    def capped(self) -> bool:
        """A limit a repository's file may only tighten: below the built-in ceiling, and
        below the value your own file sets."""
        return self.cap or self.ceiling is not None

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"


_MODELS = (AGENT, BATCH_RUN)
_AUTHORITY = (OP_RUN, OP_PUBLISH, PUBLISH)

TABLE: tuple[Binding, ...] = (
    Binding("models", "model", "model", "--model", _MODELS, "str",
            "the worker's and repair's model", repository=True),
    Binding("models", "reviewer_model", "reviewer_model", "--reviewer-model", _MODELS, "str",
            "the reviewer's model", repository=True),
    Binding("models", "max_turns", "max_turns", "--max-turns", _MODELS, "int",
            "the worker's turn cap", repository=True, ceiling=40),
    Binding("models", "max_budget_usd", "max_budget_usd", "--max-budget-usd", _MODELS, "usd",
            "spend cap per worker or repair invocation (US dollars)",
            repository=True, ceiling="5"),
    Binding("timeouts", "provider_ms", "timeout_ms", "--timeout-ms",
            (AGENT, BATCH_RUN, OP_RUN, REVIEW_LENS), "int",
            "limit of one provider invocation (ms)", repository=True, ceiling=600_000),
    Binding("timeouts", "task_deadline_s", "task_deadline_s", "--task-deadline-s",
            (BATCH_RUN,), "float", "wall-clock limit of one batch task (s)", repository=True,
            cap=True),
    Binding("timeouts", "batch_deadline_s", "deadline_s", "--deadline-s", (BATCH_RUN,),
            "float", "wall-clock limit of a whole batch (s)", repository=True, cap=True),
    Binding("keys", "operator_private_key_file", "private_key", "--private-key", _AUTHORITY,
            "path", "the operator's encrypted private key file (a path, never the key)"),
    Binding("keys", "operator_public_key_file", "public_key", "--public-key",
            _AUTHORITY, "path", "the operator's public key file"),
    Binding("operator", "ledger", "ledger", "--ledger", _AUTHORITY, "path",
            "the grant ledger folder"),
    Binding("operator", "repository", "repository", "--repository",
            (OP_PLAN, *_AUTHORITY), "str", "the forge repository (OWNER/NAME)"),
    Binding("operator", "forge_url", "forge_url", "--forge-url",
            (OP_PLAN, *_AUTHORITY, BATCH_RUN), "str", "the forge's API root"),
    Binding("operator", "remote", "remote", "--remote", (OP_PUBLISH, PUBLISH), "str",
            "the git remote a publication pushes to"),
    Binding("batch", "jobs", "jobs", "--jobs", (BATCH_RUN,), "int", "tasks at once"),
    Binding("batch", "per_login", "per_login", "--per-login", (BATCH_RUN,), "int",
            "tasks at once per login"),
    Binding("batch", "test_command", "test_argv", "--test -- ARGV", (BATCH_RUN,), "argv",
            "the test command each task runs (a list: program, then arguments)"),
    Binding("worker", "jobs", "jobs", "--jobs", (WORKER,), "int",
            "tasks at once on this machine"),
)  # fmt: skip

BY_KEY: dict[str, Binding] = {b.key: b for b in TABLE}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(b.section for b in TABLE))


def for_command(command: str) -> tuple[Binding, ...]:
    """The keys that feed ``command`` (``"batch run"``), in table order."""
    return tuple(b for b in TABLE if command in b.commands)

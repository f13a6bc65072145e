"""Apply ``factory.toml`` to a command line, once, for every command (issue 28).

:func:`parse_with_config` is what :func:`factory.cli.framework.run_command` parses with:

1. find the command the words name (``batch run``) by walking the parser's subcommands;
2. when no key feeds it (:data:`factory.config.commands.CONFIGURED`), parse as before —
   no file is touched and nothing more is imported;
3. else read the repository's file (``--repo``'s checkout, or the current folder's) and
   the user's, and for each dest a file sets, relax ``required`` so a flag the file gives
   may be left out;
4. parse; every dest the command line did not give (the strict parser records the ones it
   did) takes the file's value. Model choices are then checked by the same code as the
   flags (:func:`factory.choices.checked`), the refusal naming the file and key.

The values and their provenance are kept on the namespace as ``config_sources``
(``dest -> Resolved``) for commands that want to report them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from factory.cli.framework import _SEEN as SEEN
from factory.cli.framework import StrictParser
from factory.errors import UsageError

if TYPE_CHECKING:
    from factory.config.resolve import Resolved

SOURCES = "config_sources"
CONFIG_VALUE_INVALID = UsageError.define(
    "config-value-invalid", "fix the value in the file named, or pass the flag"
)


def command_path(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str, int]:
    """The command the words name (``"batch run"``) and the index of the first word after it."""
    words: list[str] = []
    current, i = parser, 0
    while True:
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            break
        while i < len(argv) and argv[i].startswith("-"):
            action = current._option_string_actions.get(argv[i])
            takes = action is not None and action.nargs != 0
            i += 2 if takes else 1
        if i >= len(argv) or argv[i] not in sub.choices:
            break
        words.append(argv[i])
        current = sub.choices[argv[i]]
        i += 1
    return " ".join(words), i


_WHERE = ("--repo", "--worktree", "--cwd")


def repo_folder(argv: Sequence[str], start: int) -> Path:
    """The folder whose repository's ``factory.toml`` applies: the one ``--repo``,
    ``--worktree`` or ``--cwd`` names (the first given), else the current folder."""
    for flag, value in given_flags(argv[start:]):
        if flag in _WHERE and value is not None:
            return Path(value)
    return Path.cwd()


def given_flags(words: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each ``--flag`` in ``words`` with the word after it (or after ``=``), up to ``--``."""
    out: list[tuple[str, str | None]] = []
    for i, word in enumerate(words):
        if word == "--":
            break
        if word.startswith("--") and "=" in word:
            flag, _, value = word.partition("=")
            out.append((flag, value))
        elif word.startswith("--"):
            out.append((word, words[i + 1] if i + 1 < len(words) else None))
    return out


def leaf(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    current = parser
    for word in command.split():
        sub = next(a for a in current._actions if isinstance(a, argparse._SubParsersAction))
        current = sub.choices[word]
    return current


def parse_with_config(
    parser: argparse.ArgumentParser, argv: Sequence[str], env: Mapping[str, str] | None = None
) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with the config files filling what the flags left out."""
    from factory.config.commands import CONFIGURED

    command, start = command_path(parser, argv)
    if isinstance(parser, StrictParser):
        parser.words = list(argv)
    if command not in CONFIGURED or "-h" in argv[start:] or "--help" in argv[start:]:
        return parser.parse_args(list(argv))
    from factory.config.resolve import read_files, resolve, searched
    from factory.config.table import for_command

    bindings = for_command(command)

    files = read_files(searched(repo_folder(argv, start), env))
    resolved = resolve(bindings, files)
    by_dest = {r.binding.dest: r for r in resolved.values()}
    for action in leaf(parser, command)._actions:
        if action.dest in by_dest:
            action.required = False
    args = parser.parse_args(list(argv))
    given: set[str] = getattr(args, SEEN, None) or set()
    if getattr(args, "test_argv", None):
        given = given | {"test_argv"}
    applied: dict[str, Resolved] = {}
    for dest, item in by_dest.items():
        if dest not in given:
            setattr(args, dest, item.value)
            applied[dest] = item
    check_choices(applied)
    setattr(args, SOURCES, applied)
    return args


def provenance_line(args: argparse.Namespace) -> str:
    """One stderr line naming the flags a config file filled (after a refusal, whose
    message names the flag, not the key)."""
    from factory.display import inert

    applied = getattr(args, SOURCES, {})
    parts = [
        f"{item.binding.flag} from {item.binding.key} in {inert(str(item.file))}"
        for item in applied.values()
    ]
    return "factory: note: factory.toml gave " + "; ".join(parts)


def check_choices(applied: Mapping[str, Resolved]) -> None:
    """Model choices from a file are judged by the flags' own rule, named by file and key."""
    from factory.choices import CHOICE_INVALID, checked

    for dest in _CHOICE_ARGS:
        item = applied.get(dest)
        if item is None:
            continue
        alone = {d: item.value if d == dest else None for d in _CHOICE_ARGS}
        try:
            checked(*alone.values())
        except UsageError as exc:
            if exc.spec is not CHOICE_INVALID:
                raise
            raise CONFIG_VALUE_INVALID(f"{item.file}: {item.binding.key}: {exc.fact}") from None


_CHOICE_ARGS = ("model", "reviewer_model", "max_turns", "max_budget_usd")  # checked()'s order

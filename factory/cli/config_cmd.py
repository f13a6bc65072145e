"""``factory config show|path``: the effective ``factory.toml`` values and where each came
from (issue 28). The reading and the rules are in :mod:`factory.config`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.choices import BUDGET_USD, WORKER_TURNS
from factory.display import inert
from factory.errors import UsageError

if TYPE_CHECKING:
    from factory.cli.framework import Subcommands
    from factory.config.load import Role
    from factory.config.report import ConfigShow, ConfigValue
    from factory.config.resolve import Resolved, Searched
    from factory.config.table import Binding

NO_KEYS = UsageError.define(
    "config-no-keys-for-command",
    "give a command that takes a factory.toml key (see 'factory config show')",
)
REPO_CONFLICT = UsageError.define(
    "config-repo-conflict",
    "name the repository once: 'config show --repo DIR' or the command's own --repo",
)
NOT_A_REPOSITORY = UsageError.define(
    "config-repo-not-a-checkout", "pass --repo with a folder inside a git checkout"
)

HELP = """\
factory reads repeated flags from factory.toml, in two places:

  the repository's:  <top level of the checkout --repo, --worktree or --cwd names,
                      else of the current folder's>/factory.toml
  yours:             $XDG_CONFIG_HOME/factory/factory.toml (default ~/.config/factory/)

A flag on the command line wins over the repository's file, which wins over yours, which
wins over the built-in default. A repository may be hostile, so its file may only set
[models] and [timeouts] (and only tighten the turn, spend and time limits, below the
built-in ones and below your own file's); keys, ledger,
forge, remotes and the test command come only from your file or a flag. Secrets are
never read: a key or value that looks like one (token, password, api key, private key
material) is refused, naming the key, never the value. Relative paths in your file are
relative to its folder.

Example (~/.config/factory/factory.toml):

  [models]
  model = "claude-sonnet-4-5"
  max_turns = 30
  [timeouts]
  provider_ms = 900000
  [keys]
  operator_private_key_file = "~/.factory/operator.pem"
  operator_public_key_file = "~/.factory/operator.pub.pem"
  [operator]
  ledger = "~/.factory/ledger"
  repository = "acme/widgets"
  [batch]
  jobs = 4
  test_command = ["python", "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

Every key, the flag it feeds and the commands that have it: 'factory config show'.
What one command line would use, and where each value comes from (flags included):
'factory config show -- agent --repo . --model M'.
A bad file (unknown key, wrong type, invalid TOML, not UTF-8, not a regular file) is
refused with exit 2, naming the file and the key.
"""


def register(sub: Subcommands) -> None:
    p = sub.add_parser(
        "config", help="show the factory.toml values in effect and where each came from",
        description=HELP,
    )  # fmt: skip
    csub = p.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    show = csub.add_parser(
        "show",
        help="every key: its value, its source (repository file, your file, default)",
        description="Print every factory.toml key, the flag it feeds, its effective value\n"
        "and where the value came from. --json: the factory.config-show/1 document.\n"
        "After '--', a command line: only the keys that command takes, and a flag it\n"
        "gives shown as the value's source (the files are read for its --repo,\n"
        "--worktree or --cwd when given).",
    )
    show.add_argument("--json", action="store_true", help="print the JSON document")
    show.add_argument("--repo", metavar="DIR", help="a folder of the repository (default: here)")
    show.add_argument(
        "words",
        nargs="*",
        metavar="-- COMMAND [FLAGS]",
        help="a command line (after '--'): only its keys, a flag it gives shown as the source",
    )
    show.set_defaults(handler=_show)
    path = csub.add_parser(
        "path",
        help="print the files searched and whether each exists",
        description="Print the factory.toml files factory reads here, one line each:\n"
        "ROLE<TAB>PATH<TAB>present|absent (the repository's first: it wins over yours).",
    )
    path.add_argument("--repo", metavar="DIR", help="a folder of the repository (default: here)")
    path.set_defaults(handler=_path)


def _searched(args: argparse.Namespace, words: Sequence[str] = ()) -> Searched:
    from factory.cli.config_apply import given_flags, repo_folder
    from factory.config.resolve import repository_top, searched

    if any(flag in ("--repo", "--worktree", "--cwd") for flag, _ in given_flags(words)):
        inner = searched(repo_folder(words, 0))
        if args.repo is not None and searched(Path(args.repo)).repository != inner.repository:
            raise REPO_CONFLICT(
                f"--repo {inert(args.repo, limit=80)} and the command line after '--' name "
                "different repositories"
            )
        return inner
    folder = Path(args.repo) if args.repo is not None else Path.cwd()
    if args.repo is not None and repository_top(folder) is None:
        raise NOT_A_REPOSITORY(f"--repo {args.repo} is not inside a git checkout")
    return searched(folder)


def _defaults() -> dict[str, Any]:
    """The built-in default of each key: its dest's default in the first command that has it."""
    from factory.cli.config_apply import leaf
    from factory.cli.main import build_parser
    from factory.config.table import TABLE

    parser = build_parser()
    out: dict[str, Any] = {}
    for binding in TABLE:
        value = leaf(parser, binding.commands[0]).get_default(binding.dest)
        out[binding.key] = value
    return out


def build_report(where: Searched, words: Sequence[str] = ()) -> ConfigShow:
    """Every key (or, with a command line, that command's), its value and its source."""
    from factory.cli.config_apply import check_choices
    from factory.config.report import ConfigShow, SearchedFile
    from factory.config.resolve import read_files, resolve
    from factory.config.table import TABLE

    command, bindings, flags = _command(words) if words else (None, TABLE, {})
    files = read_files(where)
    resolved = resolve(bindings, files)
    if not words:  # the model choices checked as the commands they feed check them
        check_choices({item.binding.dest: item for item in resolved.values()})
    defaults = _defaults()
    searched_files = [
        SearchedFile(role=role, path=str(path), present=any(f.path == path for f in files))
        for role, path in _roles(where)
        if path is not None
    ]
    values = [_value(b, flags, resolved.get(b.key), defaults[b.key]) for b in bindings]
    return ConfigShow(command=command, files=searched_files, values=values)


def _value(
    binding: Binding, flags: dict[str, Any], item: Resolved | None, default: Any
) -> ConfigValue:
    from factory.config.report import ConfigValue, Source

    source: Source
    if binding.key in flags:
        value, source, file = flags[binding.key], "flag", None
    elif item is None:
        value, source, file = default, "default", None
    else:
        value, source = item.value, item.source
        file = None if item.file is None else str(item.file)
    return ConfigValue(
        key=binding.key,
        flag=binding.flag,
        dest=binding.dest,
        commands=list(binding.commands),
        value=value,
        source=source,
        file=file,
        repository_may_set=binding.repository,
    )


def _command(words: Sequence[str]) -> tuple[str, tuple[Binding, ...], dict[str, Any]]:
    """The command ``words`` name, its keys, and the values its flags give (by key)."""
    from factory.cli.config_apply import command_path, given_flags
    from factory.cli.main import build_parser
    from factory.config.table import for_command

    command, start = command_path(build_parser(), words)
    bindings = for_command(command) if command else ()
    if not bindings:
        shown = inert(" ".join(words), limit=80)
        raise NO_KEYS(f"no factory.toml key feeds {shown!r}")
    _checked_like_the_command(command, words)
    given = dict(given_flags(words[start:]))
    flags: dict[str, Any] = {}
    for binding in bindings:
        if binding.kind == "argv":
            rest = list(words[start:])
            if "--test" in rest and "--" in rest:
                flags[binding.key] = rest[rest.index("--") + 1 :]
        elif binding.flag in given:
            flags[binding.key] = _as_kind(binding, given[binding.flag])
    return command, bindings, flags


def _checked_like_the_command(command: str, words: Sequence[str]) -> None:
    """``words`` parsed by the command's own parser with the files applied, and its model
    choices checked: an unknown flag, a bad type, a repeated or abbreviated flag or a value
    out of range is refused as the command refuses it (what is shown is what would run).
    Required flags may be left out: this asks about values, not a whole command line."""
    from factory.choices import choices_of
    from factory.cli.config_apply import leaf, parse_with_config
    from factory.cli.main import build_parser

    parser = build_parser()
    for action in leaf(parser, command)._actions:
        action.required = False
    choices_of(parse_with_config(parser, list(words)))


def _as_kind(binding: Binding, text: str | None) -> Any:
    converters: dict[str, Any] = {"int": int, "float": float}
    try:
        return converters.get(binding.kind, str)(text) if text is not None else None
    except ValueError:
        return text  # shown as given: the command itself refuses it


def _roles(where: Searched) -> tuple[tuple[Role, Path | None], ...]:
    return (("repository", where.repository), ("user", where.user))


def _show(args: argparse.Namespace) -> int:
    from factory.cli.framework import emit_stdout
    from factory.documents.emit import json_line

    words = list(args.words)
    report = build_report(_searched(args, words), words)
    if args.json:
        emit_stdout(json_line(report.to_json_value(), indent=2))
        return 0
    emit_stdout(render_text(report).encode("utf-8"))
    return 0


def render_text(report: ConfigShow) -> str:
    """The report for a person: the files, then one block per key (all text made inert)."""
    lines = [] if report.command is None else [f"command: factory {inert(report.command)}"]
    lines += ["files searched (a repository's file wins over yours):"]
    for f in report.files:
        state = "present" if f.present else "absent"
        lines.append(f"  {f.role:<10}  {inert(f.path)}  ({state})")
    roles = {f.role for f in report.files}
    if "repository" not in roles:
        lines.append("  repository  (not inside a git checkout: none)")
    if "user" not in roles:
        lines.append("  user        (no home folder: none)")
    lines.append("")
    width = max(len(v.key) for v in report.values)
    for v in report.values:
        where = v.source if v.file is None else f"{v.source} file {inert(v.file)}"
        where = f"the flag {v.flag}" if v.source == "flag" else where
        shown = inert(_text(v.value)) if v.value is not None else "(not set)"
        if v.value is None and v.key in BUILT_IN:
            shown = f"(not set: {BUILT_IN[v.key]})"
        lines.append(f"{v.key:<{width}}  = {shown}")
        lines.append(f"{'':<{width}}    from {where}; feeds {v.flag} in {', '.join(v.commands)}")
    return "\n".join(lines) + "\n"


# What "not set" means where the flag's default is None (see factory.choices).
BUILT_IN = {
    "models.model": "Claude Code's own model",
    "models.reviewer_model": "Codex's own model",
    "models.max_turns": f"built-in {WORKER_TURNS}",
    "models.max_budget_usd": f"built-in {BUDGET_USD}",
}


def _text(value: object) -> str:
    """A value as one would write it in factory.toml: a list keeps its brackets and quotes,
    so `["pytest", "-q", "a b"]` is not confused with four words."""
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(str(word), ensure_ascii=False) for word in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 1800 seconds, as written, not 1800.0
    return str(value)


def _state(path: Path, role: Role) -> str:
    """What the loader would make of the file: read (``present``), none (``absent``), or
    refused (a folder, a FIFO, a device; a repository's symbolic link): named, never read."""
    import stat

    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except OSError:
        return "unreadable"
    if stat.S_ISLNK(info.st_mode):
        if role == "repository":
            return "refused: a symbolic link"
        try:
            info = path.stat()
        except OSError:
            return "absent"
    return "present" if stat.S_ISREG(info.st_mode) else "refused: not a regular file"


def _path(args: argparse.Namespace) -> int:
    from factory.cli.framework import emit_stdout

    where = _searched(args)
    lines = []
    for role, path in _roles(where):
        if path is None:
            missing = "not inside a git checkout" if role == "repository" else "no home folder"
            lines.append(f"{role}\t({missing})")
        else:
            lines.append(f"{role}\t{inert(str(path))}\t{_state(path, role)}")
    emit_stdout(("\n".join(lines) + "\n").encode("utf-8"))
    return 0

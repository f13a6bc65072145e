"""The ``factory`` console script: one parser, one subcommand module per command.

Each command module under :mod:`factory.cli` exposes ``register(subparsers)`` and keeps its
heavy imports inside the handler, so ``factory --help`` and fast commands stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Sequence
from importlib import import_module

from factory import __version__
from factory.cli.collector import imports_settled
from factory.cli.framework import StrictParser, run_command
from factory.pydantic_setup import disable_plugins

# Order is the order shown in --help. Each name is a module of factory.cli.
COMMAND_MODULES: tuple[str, ...] = (
    "demo_cmd",
    "agent_cmd",
    "receipt_cmd",
    "worktree_cmd",
    "runs_cmd",
    "doctor_cmd",
    "providers_cmd",
    "smoke_cmd",
    "bus_cmd",
    "digest_cmd",
    "operator_cmd",
    "gate_cmd",
    "publish_cmd",
    "review_cmd",
    "schema_cmd",
    "batch_cmd",
    "worker_cmd",
    "config_cmd",
    "completion_cmd",
)

DESCRIPTION = """\
factory makes coding agents' work verifiable: it derives facts (digests, receipts,
evidence, verdict records) that code computes and anyone can re-check.

stdout carries only the final machine-readable output; progress and diagnostics go to
stderr. Exit codes: 0 success, 1 internal error, 2 usage or refused precondition,
3 rejected, 4 typed failure after admission, 130 interrupted.
"""


def build_parser(only: str | None = None) -> StrictParser:
    """The argument parser: every subcommand registered, or with ``only`` (a command
    module's name) just that module's (see :func:`main`)."""
    return _build(COMMAND_MODULES if only is None else (only,))[0]


def version_text() -> str:
    """``factory X`` on the first line (scripts read it), then the pinned provider CLI
    versions (SPEC P-6) and the Python running factory (issue 28 §7)."""
    import platform

    from providers.install import pins

    lines = [f"factory {__version__}"]
    lines += [f"pinned {name}: {p['package']}@{p['version']}" for name, p in sorted(pins().items())]
    lines.append(f"python: {platform.python_implementation()} {platform.python_version()}")
    lines.append(f"python executable: {sys.executable}")
    return "\n".join(lines) + "\n"


class _VersionAction(argparse.Action):
    """Computed only when asked for, so start-up imports nothing more."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from factory.cli.framework import emit_stdout

        emit_stdout(version_text().encode("utf-8"))
        parser.exit(0)


def _build(modules: Sequence[str]) -> tuple[StrictParser, Collection[str]]:
    parser = StrictParser(prog="factory", description=DESCRIPTION)
    parser.add_argument(
        "--version",
        action=_VersionAction,
        nargs=0,
        help="show factory's version, the pinned provider CLI versions and the Python in use",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=StrictParser)
    for name in modules:
        import_module(f"factory.cli.{name}").register(sub)
    return parser, sub.choices.keys()


def _parser_for(argv: Sequence[str]) -> StrictParser:
    """The parser for ``argv``: when its first word is command ``X`` registered by module
    ``X_cmd``, only that module is imported (a git hook's ``factory review validate``
    does not pay for the other thirteen); anything else gets the full parser."""
    first = argv[0] if argv else ""
    if f"{first}_cmd" in COMMAND_MODULES:
        parser, names = _build((f"{first}_cmd",))
        if first in names:
            return parser
    return build_parser()


def _hold_standard_fds() -> None:
    """Put ``/dev/null`` on fds 0-2 the caller closed. Python saw them closed at start-up
    (``sys.stdout`` is None, and the output says so on stderr); without this the next file
    factory opens (the journal, a receipt) would become fd 1 or 2, and a child that
    inherits it would write into that file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if null != fd:
                os.dup2(null, fd, inheritable=True)
                os.close(null)
            else:
                os.set_inheritable(fd, True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``factory`` console script and ``python -m factory``.

    factory's documents are judged by pydantic alone: unless the caller says otherwise,
    no installed pydantic plugin observes or changes their validation, and the process
    neither scans entry points nor imports the machinery for it (see
    :mod:`factory.pydantic_setup`).
    """
    disable_plugins()
    _hold_standard_fds()
    args = sys.argv[1:] if argv is None else argv
    if "_ARGCOMPLETE" in os.environ:  # the shell's TAB (factory completion); exits there
        from factory.cli.completion_cmd import complete

        complete(build_parser)
    with imports_settled():  # the command module and its parser (see factory.cli.collector)
        parser = _parser_for(args)
    return run_command(parser, args)


if __name__ == "__main__":
    sys.exit(main())

"""The ``factory`` console script: one parser, one subcommand module per command.

Each command module under :mod:`factory.cli` exposes ``register(subparsers)`` and keeps its
heavy imports inside the handler, so ``factory --help`` and fast commands stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

from factory import __version__
from factory.cli.framework import StrictParser, run_command

# Order is the order shown in --help. Each name is a module of factory.cli.
COMMAND_MODULES: tuple[str, ...] = (
    "demo_cmd",
    "agent_cmd",
    "receipt_cmd",
    "worktree_cmd",
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
)

DESCRIPTION = """\
factory makes coding agents' work verifiable: it derives facts (digests, receipts,
evidence, verdict records) that code computes and anyone can re-check.

stdout carries only the final machine-readable output; progress and diagnostics go to
stderr. Exit codes: 0 success, 1 internal error, 2 usage or refused precondition,
3 rejected, 4 typed failure after admission, 130 interrupted.
"""


def build_parser() -> StrictParser:
    """The full argument parser (every subcommand registered)."""
    parser = StrictParser(prog="factory", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"factory {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=StrictParser)
    for name in COMMAND_MODULES:
        import_module(f"factory.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``factory`` console script and ``python -m factory``."""
    return run_command(build_parser(), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())

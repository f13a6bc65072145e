"""Commands whose subsystems have not landed yet: they say so and exit 2."""

from __future__ import annotations

import argparse
from typing import Any

from factory.errors import UsageError

PENDING: dict[str, str] = {
    "agent": "agent factory run (SPEC A-1..A-10)",
}


def _pending(name: str, what: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        raise UsageError(f"'factory {name}' ({what}) is not yet available", code="not-available")

    return handler


def register(sub: Any) -> None:
    for name, what in PENDING.items():
        p = sub.add_parser(name, help=f"{what} (not yet available)")
        p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(handler=_pending(name, what))

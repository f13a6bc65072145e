"""Process supervision (SPEC P-1): the one runner every child of the factory goes through.

The names below are loaded on first use (PEP 562): :mod:`factory.proc.local`, the short
command wrapper git goes through, is imported by commands that never supervise a provider
(the review gates run on every commit), and importing the runner would load trio for them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from factory.proc.capture import Captured, Overflow
    from factory.proc.env import BASE_ALLOW, pick
    from factory.proc.runner import (
        DEFAULT_CAP_BYTES,
        DEFAULT_GRACE_S,
        MIB,
        ProcessFailure,
        RunResult,
        RunSpec,
        SpoolFailure,
        run,
    )
    from factory.proc.tree import SweepReport

_WHERE = {
    "Captured": "capture",
    "Overflow": "capture",
    "BASE_ALLOW": "env",
    "pick": "env",
    "DEFAULT_CAP_BYTES": "runner",
    "DEFAULT_GRACE_S": "runner",
    "MIB": "runner",
    "ProcessFailure": "runner",
    "RunResult": "runner",
    "RunSpec": "runner",
    "SpoolFailure": "runner",
    "run": "runner",
    "SweepReport": "tree",
}

__all__ = [
    "BASE_ALLOW",
    "DEFAULT_CAP_BYTES",
    "DEFAULT_GRACE_S",
    "MIB",
    "Captured",
    "Overflow",
    "ProcessFailure",
    "RunResult",
    "RunSpec",
    "SpoolFailure",
    "SweepReport",
    "pick",
    "run",
]


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value

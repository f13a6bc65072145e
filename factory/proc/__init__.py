"""Process supervision (SPEC P-1): the one runner every child of the factory goes through."""

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

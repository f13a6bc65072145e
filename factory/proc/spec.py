"""What a supervised run is given and what it returns (SPEC P-1): :class:`RunSpec`, its
limits' check, and :class:`RunResult`. :mod:`factory.proc.runner` runs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from factory.proc.capture import Captured, Overflow
from factory.proc.tree import SweepReport

MIB = 1024 * 1024
DEFAULT_CAP_BYTES = MIB
DEFAULT_GRACE_S = 2.0

StopReason = Literal["timeout", "output-limit", "spool-failed"]


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One child to supervise.

    Attributes:
        argv: program and arguments; ``argv[0]`` is an absolute path or a name looked up
            on ``env["PATH"]`` (never a shell).
        env: the complete child environment (build it from an allow-list; see
            :func:`factory.proc.env.pick`).
        timeout_s: wall-clock deadline in seconds from spawn.
        cwd: working folder, or None for the factory's own.
        stdin: bytes written to stdin and then closed; None means ``/dev/null``.
        grace_s: seconds the leader gets between SIGTERM and SIGKILL once the factory
            stops a run (its descendants are frozen meanwhile).
        stdout_cap / stderr_cap: bytes kept per stream.
        stdout_overflow / stderr_overflow: ``stop`` — one byte over the cap is
            ``output-limit`` and the tree is taken down; ``drain`` — the run goes on, the
            rest is counted but not kept (the capture says ``truncated``).
        stdout_spool / stderr_spool: a file to create (``O_EXCL``, 0600) and write the kept
            bytes into as they arrive, instead of holding them in memory.
        track_interval_s: how often the tree is re-scanned while the child runs.
    """

    argv: Sequence[str]
    env: Mapping[str, str]
    timeout_s: float
    cwd: Path | None = None
    stdin: bytes | None = None
    grace_s: float = DEFAULT_GRACE_S
    stdout_cap: int = DEFAULT_CAP_BYTES
    stderr_cap: int = DEFAULT_CAP_BYTES
    stdout_overflow: Overflow = "stop"
    stderr_overflow: Overflow = "stop"
    stdout_spool: Path | None = None
    stderr_spool: Path | None = None
    track_interval_s: float = 0.25


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished supervision: the leader is reaped and no descendant is left.

    Attributes:
        exit_code: the leader's status (negative: killed by that signal number).
        out / err: the captured streams (:class:`~factory.proc.capture.Captured`).
        duration_ms: from spawn until the last process of the tree was gone.
        stopped: why the factory ended the run, or None when the leader exited itself.
        sweep: what termination had to do (leftover descendants are frozen and killed
            even after a normal exit; ``sweep.swept`` counts them).
    """

    exit_code: int
    out: Captured
    err: Captured
    duration_ms: int
    stopped: StopReason | None
    sweep: SweepReport

    @property
    def stdout(self) -> bytes:
        """The kept stdout bytes (read from the spool file when spooled)."""
        return self.out.read()

    @property
    def stderr(self) -> bytes:
        """The kept stderr bytes (read from the spool file when spooled)."""
        return self.err.read()

    @property
    def stdout_truncated(self) -> bool:
        return self.out.truncated

    @property
    def stderr_truncated(self) -> bool:
        return self.err.truncated


def bad_limits(spec: RunSpec) -> list[str]:
    """The names of the limits P-1 refuses: a NaN, infinite or non-positive deadline or
    tracking interval, a NaN, infinite or negative grace, a negative byte cap (pure)."""
    bad = [
        name
        for name, value in (
            ("timeout_s", spec.timeout_s),
            ("track_interval_s", spec.track_interval_s),
        )
        if not (math.isfinite(value) and value > 0)
    ]
    if not (math.isfinite(spec.grace_s) and spec.grace_s >= 0):
        bad.append("grace_s")
    bad += [
        name
        for name, cap in (("stdout_cap", spec.stdout_cap), ("stderr_cap", spec.stderr_cap))
        if cap < 0
    ]
    return bad

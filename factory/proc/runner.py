"""The one supervised runner for every child process the factory starts (SPEC P-1).

:func:`run` spawns ``argv`` (a list, never a shell) in a new session with an environment
given in full by the caller (nothing is inherited), feeds stdin (bytes written then
closed, or ``/dev/null``), captures stdout and stderr up to a byte cap each, and enforces
a wall-clock deadline. Whatever ends the run — the leader exiting, the deadline, a cap,
trio cancellation or Ctrl-C — takes the same path: every process of the tree gets
SIGTERM, then after a grace period SIGKILL, and :func:`run` returns or raises only once
no descendant remains (see :mod:`factory.proc.tree`).
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import trio

from factory.errors import Code, Failure
from factory.proc.procfs import Stat, become_subreaper, read_stat
from factory.proc.tree import ProcessTree, SweepReport

MIB = 1024 * 1024
DEFAULT_CAP_BYTES = MIB
DEFAULT_GRACE_S = 2.0
_CHUNK = 64 * 1024

StopReason = Literal["timeout", "output-limit"]


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One child to supervise.

    Attributes:
        argv: program and arguments; ``argv[0]`` is an absolute path or a name looked up
            on ``env["PATH"]`` by the OS (never a shell).
        env: the complete child environment (build it from an allow-list; see
            :func:`factory.proc.env.pick`).
        timeout_s: wall-clock deadline in seconds from spawn.
        cwd: working folder, or None for the factory's own.
        stdin: bytes written to stdin and then closed; None means ``/dev/null``.
        grace_s: seconds between SIGTERM and SIGKILL.
        stdout_cap / stderr_cap: bytes kept per stream; one byte more is ``output-limit``.
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
    track_interval_s: float = 0.25


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished supervision: the leader is reaped and no descendant is left.

    Attributes:
        exit_code: the leader's status (negative: killed by that signal number).
        stdout / stderr: captured bytes, at most the caps.
        stdout_truncated / stderr_truncated: the stream produced more than its cap.
        duration_ms: from spawn until the last process of the tree was gone.
        stopped: why the factory ended the run, or None when the leader exited itself.
        sweep: what termination had to do (leftover descendants are killed even after
            a normal exit).
    """

    exit_code: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    stopped: StopReason | None
    sweep: SweepReport


class ProcessFailure(Failure):
    """A supervised child could not be run to a result (exit 4).

    Codes (generic; provider profiles map them to SPEC P-4 codes): ``timeout``,
    ``output-limit``, ``launch-failed``, ``sweep-incomplete``. ``result`` holds what was
    captured when the child ran at all.
    """

    def __init__(
        self, message: str, *, code: Code[ProcessFailure], result: RunResult | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.result = result


LAUNCH_FAILED = ProcessFailure.define(
    "launch-failed", "check that the program exists, is executable and gets valid limits"
)
TIMEOUT = ProcessFailure.define("timeout", "raise the time limit or find why the program hangs")
OUTPUT_LIMIT = ProcessFailure.define(
    "output-limit", "make the program print less, or raise its output cap"
)
SWEEP_INCOMPLETE = ProcessFailure.define(
    "sweep-incomplete", "inspect the surviving processes with ps and stop them"
)


@dataclass(slots=True)
class _Capture:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    done: trio.Event = field(default_factory=trio.Event)


@trio.lowlevel.enable_ki_protection
async def _pump(stream: trio.abc.ReceiveStream, sink: _Capture, on_overflow: _Callback) -> None:
    try:
        while True:
            chunk = await stream.receive_some(_CHUNK)
            if not chunk:
                return
            room = sink.cap - len(sink.data)
            if len(chunk) > room:
                sink.data += chunk[:room]
                sink.truncated = True
                on_overflow()
                return
            sink.data += chunk
    except (trio.ClosedResourceError, trio.BrokenResourceError):
        return
    finally:
        sink.done.set()


@trio.lowlevel.enable_ki_protection
async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    try:
        if data:
            await stream.send_all(data)
    except (trio.ClosedResourceError, trio.BrokenResourceError):
        pass
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()


@trio.lowlevel.enable_ki_protection
async def _track(tree: ProcessTree, interval_s: float) -> None:
    while True:
        await trio.sleep(interval_s)
        tree.refresh()


class _Callback:
    def __init__(self, stopped: list[StopReason], scope: trio.CancelScope) -> None:
        self.stopped = stopped
        self.scope = scope

    def __call__(self) -> None:
        if not self.stopped:
            self.stopped.append("output-limit")
        self.scope.cancel()


@trio.lowlevel.enable_ki_protection
async def _teardown(
    proc: trio.Process, tree: ProcessTree, grace_s: float
) -> tuple[SweepReport, bool]:
    """Shielded: terminate the tree and reap the leader. A Ctrl-C arriving meanwhile is
    remembered (and shortens the grace to zero), never allowed to cut the sweep short."""
    interrupted = False
    report: SweepReport | None = None
    with trio.CancelScope(shield=True):
        while report is None:
            try:
                report = await tree.terminate(grace_s=grace_s)
            except KeyboardInterrupt:
                interrupted = True
                grace_s = 0.0
        if proc.returncode is None and tree.leader not in report.survivors:
            while True:
                try:
                    with trio.move_on_after(5.0):
                        await proc.wait()
                    break
                except KeyboardInterrupt:
                    interrupted = True
    assert report is not None
    return report, interrupted


def _check_limits(spec: RunSpec) -> None:
    """P-1 wants a real deadline: NaN, infinite or non-positive limits are refused."""
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
    if bad:
        raise ProcessFailure(
            f"invalid run limits: {', '.join(bad)} (seconds must be finite and positive, "
            "byte caps non-negative)",
            code=LAUNCH_FAILED,
        )


@trio.lowlevel.enable_ki_protection
async def run(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion under supervision (SPEC P-1).

    Returns:
        :class:`RunResult` when the leader exited by itself (any exit status).

    Raises:
        ProcessFailure: ``launch-failed`` (could not spawn, or a NaN/infinite/non-positive
            deadline, a negative grace or cap), ``timeout`` (deadline),
            ``output-limit`` (a stream exceeded its cap), ``sweep-incomplete`` (a process
            survived SIGKILL rounds; should not happen) — always after the tree is gone.
        trio.Cancelled / KeyboardInterrupt: re-raised only after the tree is gone.

    KI-protected: a Ctrl-C arriving in the synchronous code right after the spawn would
    otherwise raise there and leave the child running; protected, it is delivered at the
    next checkpoint, inside the supervised wait.
    """
    if not spec.argv or not all(isinstance(a, str) for a in spec.argv):
        raise ProcessFailure("argv must be a non-empty list of strings", code=LAUNCH_FAILED)
    _check_limits(spec)
    become_subreaper()
    started = trio.current_time()
    try:
        proc = await trio.lowlevel.open_process(
            list(spec.argv),
            stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(spec.env),
            cwd=str(spec.cwd) if spec.cwd is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and exc.filename != spec.argv[0] else ""
        raise ProcessFailure(
            f"could not start {spec.argv[0]!r}: {exc.strerror or exc}{where}",
            code=LAUNCH_FAILED,
        ) from exc
    except ValueError as exc:  # a NUL byte in argv/env, or "=" in an env name
        raise ProcessFailure(
            f"could not start {spec.argv[0]!r}: {exc}",
            code=LAUNCH_FAILED,
        ) from exc
    leader = read_stat(proc.pid) or Stat(proc.pid, "R", 0, proc.pid, proc.pid, 0)
    out, err = _Capture(spec.stdout_cap), _Capture(spec.stderr_cap)
    stopped: list[StopReason] = []
    pending: BaseException | None = None
    interrupted = False
    deadline = started + spec.timeout_s
    with ProcessTree(leader) as tree:
        try:
            async with trio.open_nursery() as nursery:
                wait_scope = trio.CancelScope(deadline=deadline)
                overflow = _Callback(stopped, wait_scope)
                assert proc.stdout is not None and proc.stderr is not None
                nursery.start_soon(_pump, proc.stdout, out, overflow)
                nursery.start_soon(_pump, proc.stderr, err, overflow)
                if proc.stdin is not None:
                    nursery.start_soon(_feed, proc.stdin, spec.stdin or b"")
                nursery.start_soon(_track, tree, spec.track_interval_s)
                try:
                    with wait_scope:
                        await proc.wait()
                    if wait_scope.cancelled_caught and not stopped:
                        stopped.append("timeout")
                except BaseException as exc:  # Cancelled or KeyboardInterrupt: clean up first
                    pending = exc
                sweep, interrupted = await _teardown(proc, tree, spec.grace_s)
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await out.done.wait()
                    await err.done.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        await stream.aclose()
    if pending is not None:
        raise pending
    if interrupted:
        raise KeyboardInterrupt
    result = RunResult(
        exit_code=proc.returncode if proc.returncode is not None else -9,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        duration_ms=round((trio.current_time() - started) * 1000),
        stopped=stopped[0] if stopped else None,
        sweep=sweep,
    )
    name = Path(spec.argv[0]).name
    if sweep.survivors:
        raise ProcessFailure(
            f"{name}: {len(sweep.survivors)} process(es) survived SIGKILL",
            code=SWEEP_INCOMPLETE,
            result=result,
        )
    if result.stopped == "timeout":
        raise ProcessFailure(
            f"{name} did not finish within {spec.timeout_s:g} s; it and its children were stopped",
            code=TIMEOUT,
            result=result,
        )
    if result.stopped == "output-limit":
        raise ProcessFailure(
            f"{name} wrote more than its output cap (stdout {spec.stdout_cap} B, stderr "
            f"{spec.stderr_cap} B); it and its children were stopped",
            code=OUTPUT_LIMIT,
            result=result,
        )
    return result

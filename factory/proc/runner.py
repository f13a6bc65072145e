"""The one supervised runner for every child process the factory starts (SPEC P-1).

:func:`run` spawns ``argv`` (a list, never a shell) in a new session with an environment
given in full by the caller (nothing is inherited), feeds stdin (bytes written then
closed, or ``/dev/null``), captures stdout and stderr up to a byte cap each (kept in
memory or spooled to a file; past the cap a stream either stops the run or is drained and
counted), and enforces a wall-clock deadline. Whatever ends the run — the leader exiting,
the deadline, a cap, trio cancellation or Ctrl-C — ends in the same teardown
(:meth:`factory.proc.tree.ProcessTree.terminate`): every descendant is frozen with
SIGSTOP; only a leader the factory stopped while it still ran gets SIGTERM and the grace
period; then SIGKILL rounds until nothing of the tree is left. :func:`run` returns or
raises only once no descendant remains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trio

from factory.errors import Code, Failure, IntegrityFailure
from factory.proc.capture import Sink, SpoolError
from factory.proc.procfs import Stat, become_subreaper, read_stat
from factory.proc.spawn import Child, LaunchError, spawn
from factory.proc.spec import (
    DEFAULT_CAP_BYTES,
    DEFAULT_GRACE_S,
    MIB,
    RunResult,
    RunSpec,
    StopReason,
    bad_limits,
)
from factory.proc.tree import ProcessTree, SweepReport

_CHUNK = 64 * 1024


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


class SpoolFailure(IntegrityFailure):
    """A stream's spool file could not be created or written (exit 4): the child's output
    could not be kept as evidence, so the run is not used. ``result`` holds the rest."""

    def __init__(self, message: str, *, result: RunResult | None = None) -> None:
        super().__init__(message, code=OUTPUT_SPOOL_FAILED)
        self.result = result


OUTPUT_SPOOL_FAILED = SpoolFailure.define(
    "output-spool-failed", "check free space and permissions of the evidence folder, then rerun"
)


@trio.lowlevel.enable_ki_protection
async def _pump(stream: trio.abc.ReceiveStream, sink: Sink, on_overflow: _Callback) -> None:
    try:
        while True:
            chunk = await stream.receive_some(_CHUNK)
            if not chunk:
                return
            crossed = sink.take(chunk)
            if sink.error is not None:
                on_overflow("spool-failed")
            elif crossed and sink.overflow == "stop":
                on_overflow("output-limit")  # and keep reading: the count stays true
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
        # Reaped as they go: orphans that exit re-parent to the factory as zombies, and a
        # tree that forks without end would otherwise fill the process table (and slow
        # every later scan) until its teardown.
        tree.reap(tree.refresh())


class _Callback:
    def __init__(self, stopped: list[StopReason], scope: trio.CancelScope) -> None:
        self.stopped = stopped
        self.scope = scope

    def __call__(self, reason: StopReason) -> None:
        if not self.stopped:
            self.stopped.append(reason)
        self.scope.cancel()


@trio.lowlevel.enable_ki_protection
async def _teardown(
    child: Child, tree: ProcessTree, grace_s: float, *, leader_running: bool
) -> tuple[SweepReport, bool]:
    """Shielded: terminate the tree and reap the leader. A Ctrl-C arriving meanwhile is
    remembered (and shortens the grace to zero), never allowed to cut the sweep short."""
    interrupted = False
    report: SweepReport | None = None
    with trio.CancelScope(shield=True):
        while report is None:
            try:
                report = await tree.terminate(grace_s=grace_s, leader_running=leader_running)
            except KeyboardInterrupt:
                interrupted = True
                grace_s = 0.0
        if child.returncode is None and tree.leader not in report.survivors:
            while True:
                try:
                    with trio.move_on_after(5.0):
                        await child.wait()
                    break
                except KeyboardInterrupt:
                    interrupted = True
    assert report is not None
    return report, interrupted


def _check_limits(spec: RunSpec) -> None:
    """P-1 wants a real deadline: NaN, infinite or non-positive limits are refused."""
    bad = bad_limits(spec)
    if bad:
        raise LAUNCH_FAILED(
            f"invalid run limits: {', '.join(bad)} (seconds must be finite and positive, "
            "byte caps non-negative)"
        )


def _sinks(spec: RunSpec) -> tuple[Sink, Sink]:
    """The two stream sinks, their spool files created (nothing is spawned otherwise).

    Raises:
        SpoolFailure: a spool file could not be created.
    """
    out = Sink(spec.stdout_cap, spec.stdout_overflow, spec.stdout_spool)
    err = Sink(spec.stderr_cap, spec.stderr_overflow, spec.stderr_spool)
    try:
        out.open()
        err.open()
    except SpoolError as exc:
        out.close()
        raise SpoolFailure(f"the child's output could not be spooled ({exc.strerror})") from exc
    return out, err


def _start(spec: RunSpec, out: Sink, err: Sink) -> Child:
    """Spawn the leader (see :mod:`factory.proc.spawn`), mapping errors to ``launch-failed``."""
    try:
        return spawn(spec.argv, spec.env, spec.cwd, with_stdin=spec.stdin is not None)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in argv/env, "=" in an env name
        out.close()
        err.close()
        if isinstance(exc, ValueError):
            reason = str(exc)
        else:
            where = f" ({exc.filename})" if exc.filename and exc.filename != spec.argv[0] else ""
            reason = f"{exc.strerror or exc}{where}"
        raise LAUNCH_FAILED(f"could not start {spec.argv[0]!r}: {reason}") from exc


def _raise_for(spec: RunSpec, result: RunResult, spool_error: OSError | None) -> None:
    name = Path(spec.argv[0]).name
    if result.sweep.survivors:
        raise ProcessFailure(
            f"{name}: {len(result.sweep.survivors)} process(es) survived SIGKILL (the "
            "factory's guard stops what it recorded of them when the factory exits)",
            code=SWEEP_INCOMPLETE,
            result=result,
        )
    if spool_error is not None:
        raise SpoolFailure(
            f"{name}'s output could not be written to its spool file ({spool_error.strerror}); "
            "it and its children were stopped",
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


@dataclass(slots=True)
class _Ended:
    """How the supervised wait ended (see :func:`_supervise`)."""

    stopped: list[StopReason] = field(default_factory=list)
    sweep: SweepReport | None = None
    pending: BaseException | None = None  # Cancelled or KeyboardInterrupt, re-raised later
    launch: LaunchError | None = None
    interrupted: bool = False


@trio.lowlevel.enable_ki_protection
async def _supervise(
    spec: RunSpec, child: Child, tree: ProcessTree, sinks: tuple[Sink, Sink], started: float
) -> _Ended:
    """Pump both streams, feed stdin and track the tree while waiting for the leader (or
    the deadline, a cap, a cancellation), then take the tree down, shielded."""
    out, err = sinks
    end = _Ended()
    async with trio.open_nursery() as nursery:
        wait_scope = trio.CancelScope(deadline=started + spec.timeout_s)
        overflow = _Callback(end.stopped, wait_scope)
        nursery.start_soon(_pump, child.stdout, out, overflow)
        nursery.start_soon(_pump, child.stderr, err, overflow)
        if child.stdin is not None:
            nursery.start_soon(_feed, child.stdin, spec.stdin or b"")
        nursery.start_soon(_track, tree, spec.track_interval_s)
        try:
            with wait_scope:
                try:
                    await child.started()
                except LaunchError as exc:
                    end.launch = exc
                await child.wait()
            if wait_scope.cancelled_caught and not end.stopped:
                end.stopped.append("timeout")
        except BaseException as exc:  # Cancelled or KeyboardInterrupt: clean up first
            end.pending = exc
        end.sweep, end.interrupted = await _teardown(
            child, tree, spec.grace_s, leader_running=child.returncode is None
        )
        with trio.CancelScope(shield=True), trio.move_on_after(1.0):
            await out.done.wait()
            await err.done.wait()
        nursery.cancel_scope.cancel()
    return end


@trio.lowlevel.enable_ki_protection
async def run(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion under supervision (SPEC P-1).

    Returns:
        :class:`RunResult` when the leader exited by itself (any exit status).

    Raises:
        ProcessFailure: ``launch-failed`` (could not spawn, or a NaN/infinite/non-positive
            deadline, a negative grace or cap), ``timeout`` (deadline),
            ``output-limit`` (a ``stop`` stream exceeded its cap), ``sweep-incomplete`` (a
            process survived SIGKILL rounds; should not happen) — always after the tree
            is gone.
        SpoolFailure: a spool file could not be created (nothing ran) or written (the run
            was stopped).
        trio.Cancelled / KeyboardInterrupt: re-raised only after the tree is gone.

    KI-protected: a Ctrl-C arriving in the synchronous code right after the spawn would
    otherwise raise there and leave the child running; protected, it is delivered at the
    next checkpoint, inside the supervised wait.
    """
    if not spec.argv or not all(isinstance(a, str) for a in spec.argv):
        raise LAUNCH_FAILED("argv must be a non-empty list of strings")
    _check_limits(spec)
    become_subreaper()
    out, err = _sinks(spec)
    started = trio.current_time()
    child = _start(spec, out, err)
    leader = read_stat(child.pid) or Stat(child.pid, "R", 0, child.pid, child.pid, 0)
    with ProcessTree(leader) as tree:
        try:
            end = await _supervise(spec, child, tree, (out, err), started)
        finally:
            with trio.CancelScope(shield=True):
                for stream in (child.stdin, child.stdout, child.stderr, child.status):
                    if stream is not None:
                        await stream.aclose()
            captured = out.close(), err.close()
    if end.pending is not None:
        raise end.pending
    if end.interrupted:
        raise KeyboardInterrupt
    if end.launch is not None:
        raise LAUNCH_FAILED(
            f"could not start {spec.argv[0]!r}: {end.launch.strerror}"
        ) from end.launch
    assert end.sweep is not None
    result = RunResult(
        exit_code=child.returncode if child.returncode is not None else -9,
        out=captured[0],
        err=captured[1],
        duration_ms=round((trio.current_time() - started) * 1000),
        stopped=end.stopped[0] if end.stopped else None,
        sweep=end.sweep,
    )
    _raise_for(spec, result, out.error or err.error)
    return result


__all__ = [
    "DEFAULT_CAP_BYTES",
    "DEFAULT_GRACE_S",
    "LAUNCH_FAILED",
    "MIB",
    "OUTPUT_LIMIT",
    "OUTPUT_SPOOL_FAILED",
    "SWEEP_INCOMPLETE",
    "TIMEOUT",
    "ProcessFailure",
    "RunResult",
    "RunSpec",
    "SpoolFailure",
    "StopReason",
    "run",
]

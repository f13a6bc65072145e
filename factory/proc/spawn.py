"""Start a supervised leader so that it dies with the factory (SPEC P-1).

The leader is started in a new session through a small exec shim, the *leash*, that

1. arms ``PR_SET_PDEATHSIG`` (SIGKILL) for itself, then
2. re-checks that its parent is still the factory — if the factory died between the fork
   and step 1, no signal would ever come, so the leash exits instead of running the
   program — and
3. ``execve``\\s the program with the environment exactly as the runner gave it (read
   back from ``/proc/self/environ``: the interpreter's start-up may add ``LC_CTYPE`` to
   its own ``environ``). The death signal survives ``execve``.

An ``execve`` failure is reported on a close-on-exec status pipe (as :mod:`subprocess`
does), so a program that cannot be started is still a typed ``launch-failed``.

The parent-death signal fires when the *thread* that forked the child exits, not only the
process. Trio spawns in a worker thread that it retires after idling, which would kill a
long run; so the fork happens here, in the thread that runs the trio loop and waits for
the child (it outlives the child by construction), and the child is then watched through
a pidfd.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

_LEASH = r"""
import ctypes, os, sys
status = int(sys.argv[1])
def fail(code, what):
    os.write(status, f"{code}:{what}".encode("utf-8", "replace"))
    os._exit(127)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
    fail(ctypes.get_errno(), "prctl")
if os.getppid() != int(sys.argv[2]):
    os._exit(137)  # the factory is already gone: run nothing
os.set_inheritable(status, False)
try:
    with open("/proc/self/environ", "rb") as fh:
        raw = fh.read()
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
except OSError:
    env = os.environb
try:
    os.execve(sys.argv[3], sys.argv[4:], env)
except OSError as exc:
    fail(exc.errno, exc.strerror or "execve")
"""


class LaunchError(OSError):
    """The program could not be started (missing, not executable, bad format)."""


@dataclass(slots=True)
class Child:
    """A started leader: its ``Popen`` (status collection only) and our pipe ends."""

    popen: subprocess.Popen[bytes]
    stdin: trio.lowlevel.FdStream | None
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream
    status: trio.lowlevel.FdStream

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def started(self) -> None:
        """Wait until the leash has exec'd the program.

        Raises:
            LaunchError: ``execve`` failed (the leash has exited; it is reaped by
                :meth:`wait`).
        """
        report = b""
        while chunk := await self.status.receive_some(4096):
            report += chunk
        await self.status.aclose()
        if report:
            code, _, what = report.decode("utf-8", "replace").partition(":")
            number = int(code) if code.isdigit() else errno.EIO
            raise LaunchError(number, what or os.strerror(number))

    async def wait(self) -> int:
        """Wait for the leader to exit and reap it (cancellable; reaping is idempotent)."""
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            pidfd = -1
        try:
            while self.popen.poll() is None:
                if pidfd >= 0:
                    await trio.lowlevel.wait_readable(pidfd)
                else:
                    await trio.sleep(0.01)
        finally:
            if pidfd >= 0:
                os.close(pidfd)
        assert self.popen.returncode is not None
        return self.popen.returncode


def resolve(program: str, env: Mapping[str, str]) -> str:
    """The file ``program`` names, searched on ``env["PATH"]`` when it has no slash."""
    if "/" in program:
        return program
    path = env.get("PATH", os.defpath)
    found = shutil.which(program, path=path)
    if found is None:
        raise LaunchError(errno.ENOENT, "No such file or directory")
    return found


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None,
    *,
    with_stdin: bool,
) -> Child:
    """Fork and exec ``argv`` through the leash, in a new session, in this thread.

    Raises:
        LaunchError: the program was not found.
        OSError, ValueError: what :class:`subprocess.Popen` raises (a missing ``cwd``, a
            NUL in argv or env).
    """
    program = resolve(argv[0], env)
    status_r, status_w = os.pipe()
    ours: list[int] = [status_r]
    theirs: list[int] = [status_w]
    try:
        stdin_r = subprocess.DEVNULL
        stdin_w = -1
        if with_stdin:
            stdin_r, stdin_w = os.pipe()
            ours.append(stdin_w)
            theirs.append(stdin_r)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ours += [out_r, err_r]
        theirs += [out_w, err_w]
        leash = [sys.executable, "-I", "-S", "-c", _LEASH, str(status_w), str(os.getpid())]
        popen = subprocess.Popen(
            [*leash, program, *argv],
            stdin=stdin_r,
            stdout=out_w,
            stderr=err_w,
            env=dict(env),
            cwd=os.fspath(cwd) if cwd is not None else None,
            start_new_session=True,
            pass_fds=(status_w,),
            close_fds=True,
        )
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return Child(
        popen=popen,
        stdin=trio.lowlevel.FdStream(stdin_w) if with_stdin else None,
        stdout=trio.lowlevel.FdStream(out_r),
        stderr=trio.lowlevel.FdStream(err_r),
        status=trio.lowlevel.FdStream(status_r),
    )

"""Short local commands: the one wrapper for git, the demo's git and the bus server's
environment (SPEC P-1). Provider CLIs never come here: they go through the supervised
runner (:mod:`factory.proc.runner`).

The policy, defined once:

* argv only (a non-empty list of strings; never a shell, never a command string);
* the child environment starts empty and takes only :data:`LOCAL_ALLOW` from the caller,
  plus what the call site sets explicitly (``extra``);
* stdin is ``/dev/null``, or exactly the bytes the call site passes (then closed);
* output is bounded: more than ``stdout_cap`` / ``stderr_cap`` bytes stops the command
  (``command-output-limit``), so a runaway child cannot fill memory;
* a deadline (``command-timeout``); the child is killed and reaped when it passes;
* stderr is kept and returned, so a failing command's own words reach the error.

The child stays in factory's session and process group (unlike a supervised provider), so
a Ctrl-C at the terminal reaches it too, and the subreaper sweep never takes it.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from factory.errors import Failure
from factory.proc.env import LOCAL_ALLOW, pick

DEFAULT_TIMEOUT_S: Final = 300.0
DEFAULT_STDOUT_CAP: Final = 1 << 30
DEFAULT_STDERR_CAP: Final = 1 << 20
_CHUNK: Final = 1 << 16


class CommandFailure(Failure):
    """A short local command could not be run to an exit status (exit 4)."""


COMMAND_NOT_FOUND = CommandFailure.define(
    "command-not-found", "install the program and put it on PATH"
)
COMMAND_TIMEOUT = CommandFailure.define(
    "command-timeout", "check for a stuck process or a slow disk, then rerun"
)
COMMAND_OUTPUT_LIMIT = CommandFailure.define(
    "command-output-limit", "the command printed far more than expected: check its input"
)


@dataclass(frozen=True, slots=True)
class Completed:
    """A command that exited: its status and the bytes it wrote."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes


def local_env(
    extra: Mapping[str, str] | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The child environment of a local command: :data:`LOCAL_ALLOW` names present in the
    caller's environment (``environ``, default ``os.environ``), ``PATH`` defaulted, then
    ``extra``."""
    env = pick(os.environ if environ is None else environ, LOCAL_ALLOW)
    env.setdefault("PATH", os.defpath)
    if extra:
        env.update(extra)
    return env


def checked_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as a list, refused (internal: a caller bug) unless it is non-empty strings."""
    if isinstance(argv, str | bytes):  # a command string, which a shell would split
        raise TypeError("a command is a list of arguments, never a command string")
    args = list(argv)
    if not args or not all(isinstance(a, str) for a in args):
        raise TypeError("a command is a non-empty list of strings")
    return args


def run_local(
    argv: Sequence[str],
    *,
    cwd: Path,
    env_extra: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    stdout_cap: int = DEFAULT_STDOUT_CAP,
    stderr_cap: int = DEFAULT_STDERR_CAP,
    stdin: bytes | None = None,
) -> Completed:
    """Run ``argv`` in ``cwd`` to its exit and return what it wrote (any exit status);
    ``stdin`` bytes, when given, are its input.

    Raises:
        CommandFailure: ``command-not-found`` (the program cannot be started),
            ``command-timeout`` or ``command-output-limit`` (the child was killed).
    """
    args = checked_argv(argv)
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=local_env(env_extra),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise COMMAND_NOT_FOUND(f"{args[0]} cannot be started ({exc.strerror})") from exc
    with proc:
        deadline = time.monotonic() + timeout_s
        out, err, problem = _collect(proc, stdin, deadline, (stdout_cap, stderr_cap))
        if problem is None:
            try:
                returncode = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                problem = "timeout"
        if problem is not None:
            proc.kill()
            proc.wait()
            what = f"{args[0]} {args[1] if len(args) > 1 else ''}".strip()
            if problem == "timeout":
                raise COMMAND_TIMEOUT(f"{what} did not finish in {timeout_s:g} s")
            raise COMMAND_OUTPUT_LIMIT(f"{what} wrote more than {problem}")
    return Completed(tuple(args), returncode, out, err)


def _collect(
    proc: subprocess.Popen[bytes], stdin: bytes | None, deadline: float, caps: tuple[int, int]
) -> tuple[bytes, bytes, str | None]:
    """Feed ``stdin`` and read both pipes to EOF under the caps and the deadline; the third
    value names what stopped the read (``timeout`` or the cap passed), else ``None``."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.fileno(), proc.stderr.fileno()
    buffers = {out: bytearray(), err: bytearray()}
    limits = {out: (caps[0], "stdout"), err: (caps[1], "stderr")}
    pending = memoryview(stdin or b"")
    with selectors.DefaultSelector() as sel:
        for fd in buffers:
            sel.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", b"", "timeout"
            for key, _ in sel.select(timeout=left):
                if key.fd not in buffers:  # stdin is writable
                    pending = _feed(key.fd, pending, sel, proc)
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                buffers[key.fd] += chunk
                cap, name = limits[key.fd]
                if len(buffers[key.fd]) > cap:
                    return b"", b"", f"{cap} bytes on {name}"
    return bytes(buffers[out]), bytes(buffers[err]), None


def _feed(
    fd: int, pending: memoryview, sel: selectors.BaseSelector, proc: subprocess.Popen[bytes]
) -> memoryview:
    """Write what the pipe takes of ``pending``; close stdin once all is written (or the
    child stopped reading)."""
    try:
        pending = pending[os.write(fd, pending[:_CHUNK]) :] if pending else pending
    except BrokenPipeError:
        pending = pending[:0]
    if not pending:
        sel.unregister(fd)
        assert proc.stdin is not None
        proc.stdin.close()
    return pending

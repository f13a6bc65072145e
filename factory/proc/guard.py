"""The guard: takes every supervised tree down if the factory itself is killed (SPEC P-1).

The parent-death signal (:mod:`factory.proc.spawn`) kills a leader with the factory, but
not the leader's descendants: those run on, re-parented to PID 1. So the first supervised
run also starts one small guard process per factory. The factory tells it, over a pipe,
which sessions and which ``(pid, start time)`` belong to live trees (each tree re-scan
sends what is new; a tree that ended is forgotten). The guard does nothing else until the
pipe reaches end of file — which happens when the factory exits, however it dies — and
then freezes (SIGSTOP) and kills (SIGKILL) every process still in a recorded session or
recorded by identity, re-scanning until none is left, and exits.

The guard stays in the factory's session (so no tree ever claims it as an escaped orphan)
but in its own process group (so a terminal's Ctrl-C does not reach it), and ignores
SIGINT, SIGTERM and SIGHUP: only the end of the pipe ends it. Writes to the pipe never
block the factory; if the guard is gone they are dropped. At a normal interpreter exit
the factory closes the pipe and waits for the guard to end.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import subprocess
import sys
import threading

_GUARD = r"""
import os, signal, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
sessions, procs, buf = set(), {}, b""
while True:
    try:
        chunk = os.read(0, 65536)
    except InterruptedError:
        continue
    if not chunk:
        break
    buf += chunk
    *lines, buf = buf.split(b"\n")
    for line in lines:
        f = line.split()
        if len(f) == 2 and f[0] == b"s":
            sessions.add(int(f[1]))
        elif len(f) == 2 and f[0] == b"e":
            sid = int(f[1])
            sessions.discard(sid)
            procs = {k: v for k, v in procs.items() if v != sid}
        elif len(f) == 4 and f[0] == b"p":
            procs[(int(f[2]), int(f[3]))] = int(f[1])
if not sessions and not procs:
    raise SystemExit(0)  # every tree ended before the factory did
me = os.getpid()
def targets():
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
            rest = raw[raw.rfind(b")") + 2:].split()
            pid, state, sid, start = int(name), rest[0], int(rest[3]), int(rest[19])
        except (OSError, IndexError, ValueError):
            continue
        if state not in (b"Z", b"X") and (sid in sessions or (pid, start) in procs):
            out[pid] = state
    return out
def hit(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
for _ in range(100):  # freeze: nothing acts while the rest is found
    found = targets()
    running = [pid for pid, state in found.items() if state not in (b"T", b"t")]
    if not running:
        break
    hit(running, signal.SIGSTOP)
    time.sleep(0.002)
for _ in range(250):  # then kill, re-scanning, for up to about 5 s
    found = targets()
    if not found:
        break
    hit(found, signal.SIGKILL)
    time.sleep(0.02)
"""

_lock = threading.Lock()
_pipe: int | None = None
_guard: subprocess.Popen[bytes] | None = None


def _start() -> int | None:
    """Start the guard once; the write end of its pipe, or None when it cannot run."""
    global _pipe, _guard
    if _pipe is not None:
        return _pipe
    if not sys.platform.startswith("linux"):
        return None
    r, w = os.pipe()
    try:
        _guard = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARD],
            stdin=r,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
            close_fds=True,
            process_group=0,
        )
    except OSError:
        os.close(w)
        return None
    finally:
        os.close(r)
    os.set_blocking(w, False)
    _pipe = w
    atexit.register(_stop)
    return w


def _stop() -> None:
    """At a normal exit: end the pipe and wait (briefly) for the guard to finish, so the
    factory leaves no process behind it."""
    global _pipe
    with _lock:
        if _pipe is not None:
            os.close(_pipe)
            _pipe = None
    if _guard is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _guard.wait(timeout=5)


def _send(line: str) -> None:
    with _lock:
        fd = _start()
        if fd is None:
            return
        with contextlib.suppress(OSError):
            data = (line + "\n").encode("ascii")
            while data:
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    return  # the guard is not reading: drop rather than block the factory
                except OSError as exc:
                    if exc.errno == errno.EINTR:
                        continue
                    raise


def watch_session(sid: int) -> None:
    """A tree with session ``sid`` starts: the guard kills its session if we die."""
    _send(f"s {sid}")


def watch_process(sid: int, pid: int, start_ticks: int) -> None:
    """A member of tree ``sid`` outside that session: the guard kills it if we die."""
    _send(f"p {sid} {pid} {start_ticks}")


def forget_session(sid: int) -> None:
    """Tree ``sid`` is gone: nothing of it is left to kill."""
    _send(f"e {sid}")


def guard_pid() -> int | None:
    """The guard's pid once started (tests), else None."""
    return _guard.pid if _guard is not None else None

"""Read-only views of Linux ``/proc`` and the child-subreaper switch (SPEC P-1).

Liveness is decided from ``/proc/<pid>/stat``, never from ``kill(pid, 0)``: a zombie
answers that signal but is not gone until its parent reaps it. A process is identified by
``(pid, starttime)`` so a recycled pid is never mistaken for a process we saw earlier.

Everything here is synchronous and cheap (one small file read per process); the runner
calls it between trio checkpoints.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
_subreaper_state: bool | None = None


@dataclass(frozen=True, slots=True)
class Stat:
    """The fields of ``/proc/<pid>/stat`` that supervision needs.

    Attributes:
        pid: process id.
        state: one-letter state (``R``, ``S``, ``D``, ``T``, ``Z`` zombie, ``X`` dead …) of
            the thread-group leader — except that a leader which exited while other
            threads still run reports a running thread's state, not ``Z``.
        ppid: parent pid.
        pgid: process group id.
        sid: session id.
        starttime: clock ticks after boot at which it started (pid-reuse guard).
    """

    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int
    starttime: int

    @property
    def exited(self) -> bool:
        """True for a zombie or dead entry: it runs no code but may still need reaping."""
        return self.state in ("Z", "X")


def read_stat(pid: int) -> Stat | None:
    """Parse ``/proc/<pid>/stat``; ``None`` when no such process exists (any more)."""
    try:
        fd = os.open(f"{PROC}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # comm (field 2) may hold spaces and parentheses: split at the last ')'.
    close = raw.rfind(b")")
    if close < 0:
        return None
    fields = raw[close + 2 :].split()
    try:
        state = fields[0].decode("ascii", "replace")
        if state in ("Z", "X"):
            state = _live_thread_state(pid) or state
        return Stat(
            pid=pid,
            state=state,
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            starttime=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def _live_thread_state(pid: int) -> str | None:
    """State of a still-running thread of ``pid``, or None when every thread has exited.

    A thread-group leader that called ``pthread_exit`` shows ``Z`` in ``/proc/<pid>/stat``
    while its other threads keep running and keep the process alive: such a process has
    not exited and must still be signalled.
    """
    try:
        tids = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        if tid == str(pid):
            continue
        try:
            with open(f"{PROC}/{pid}/task/{tid}/stat", "rb") as fh:
                raw = fh.read(4096)
        except OSError:
            continue
        close = raw.rfind(b")")
        state = raw[close + 2 : close + 3].decode("ascii", "replace") if close >= 0 else ""
        if state and state not in ("Z", "X"):
            return state
    return None


def all_pids() -> list[int]:
    """Every pid currently listed in ``/proc``."""
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def children_of(pid: int) -> set[int]:
    """Direct children of ``pid`` (all of its threads), via ``/proc/<pid>/task/*/children``.

    Cost grows with the process's threads and children, not with the system; a task or
    process gone meanwhile contributes nothing. Falls back to a full scan only when the
    kernel lacks the file (``CONFIG_PROC_CHILDREN``, see :func:`children_supported`).
    """
    if not children_supported():
        return {s.pid for s in scan() if s.ppid == pid}
    out: set[int] = set()
    task_dir = f"{PROC}/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/children", "rb") as fh:
                text = fh.read()
        except OSError:
            continue
        out.update(int(c) for c in text.split())
    return out


_children_state: bool | None = None


def children_supported() -> bool:
    """Whether this kernel lists children in ``/proc/<pid>/task/<tid>/children``."""
    global _children_state
    if _children_state is None:
        _children_state = os.path.exists(f"{PROC}/self/task/{os.getpid()}/children")
    return _children_state


#: Pids past the highest listed one that :func:`scan` also tries.
PROBE_AHEAD = 64


def scan() -> list[Stat]:
    """A stat of every process on the system (a full ``/proc`` scan, ~1 ms per 100).

    Newest first: the highest pids are read right after the listing, then the next
    :data:`PROBE_AHEAD` pids past it (processes born while the listing was made), then
    the rest in descending order. A process that forks and exits at once (a fork chain)
    has the highest pid only for a moment; read last, it would always be gone already.
    """
    listed = sorted(all_pids(), reverse=True)
    top = listed[0] if listed else 0
    stats = []
    for pid in [*range(top + PROBE_AHEAD, top, -1), *listed]:
        st = read_stat(pid)
        if st is not None:
            stats.append(st)
    return stats


def reap_if_zombie_child(pid: int) -> bool:
    """``waitpid(pid, WNOHANG)`` when ``pid`` is our own exited child; True once reaped.

    Only ever called for pids the runner attributed to a supervised tree (never for a
    leader, whose status trio collects), so no other code's child status is stolen.
    """
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return read_stat(pid) is None
    return done == pid


BOOT_ID = PROC / "sys" / "kernel" / "random" / "boot_id"


def boot_id() -> str:
    """This boot's id (``/proc/sys/kernel/random/boot_id``), or ``""`` when unreadable.

    With the start time it makes a process identity that survives pid reuse and reboots.
    """
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def alive(pid: int, starttime: int, boot: str) -> bool | None:
    """Whether the process ``(pid, starttime)`` of boot ``boot`` still runs here.

    None when it cannot be told (no ``/proc``: another system). An exited process (also
    an unreaped zombie), a recycled pid or another boot is not alive.
    """
    if not PROC.is_dir() or not boot_id():
        return None
    if boot != boot_id():
        return False
    st = read_stat(pid)
    return st is not None and st.starttime == starttime and not st.exited


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), once.

    Orphaned descendants then re-parent to the factory instead of PID 1, so a process
    that called ``setsid`` and lost its parent can still be found and reaped. Returns
    whether the switch is on; False on non-Linux systems or when ``prctl`` refuses.
    """
    global _subreaper_state
    if _subreaper_state is not None:
        return _subreaper_state
    if not sys.platform.startswith("linux"):
        _subreaper_state = False
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        _subreaper_state = False
        return False
    _subreaper_state = rc == 0
    return _subreaper_state

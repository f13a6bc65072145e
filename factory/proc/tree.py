"""Track every process a supervised child started, and take the whole tree down (SPEC P-1).

Membership of a tree (re-derived from one ``/proc`` scan on every refresh):

* the leader (spawned in a new session, so its session id is its pid);
* every process in the leader's session, wherever it was re-parented;
* every process seen in the tree before (``(pid, starttime)``), while it still exists;
* orphans re-parented to the factory (a child subreaper) that are outside the factory's
  own session and not claimed by another live tree — a descendant can never re-join the
  factory's session, so an ordinary ``subprocess.run`` child of ours is never taken;
* all descendants of the above.

Termination (:meth:`ProcessTree.terminate`), from the moment the factory decides to stop:

1. **freeze**: SIGSTOP to every member but the leader (each process group without the
   leader, then each pid), re-scanned until a scan finds no member left running — a
   stopped process cannot fork, write or signal, so from here on nothing of the tree
   but the leader acts;
2. **grace** (only when the factory stopped a leader that was still running): SIGTERM to
   the leader alone, which may flush and exit within ``grace_s``; members it starts
   meanwhile are frozen as they appear;
3. **kill**: SIGKILL rounds (re-scanning each round) until no member runs and every
   zombie we are the parent of has been reaped. SIGKILL ends a stopped process at once.

After a leader exited by itself the same runs with no grace: leftovers are frozen and
killed before the runner returns (the leader is done; nothing it left may act later).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

import trio

from factory.proc import guard
from factory.proc.procfs import Stat, reap_if_zombie_child, scan

# Leader pid -> tree, for every supervised child alive in this process.
_ACTIVE: dict[int, ProcessTree] = {}
# States of a process that runs no code until it is continued (job control, tracing).
_STOPPED = ("T", "t")


@dataclass(frozen=True, slots=True)
class SweepReport:
    """What a termination did.

    Attributes:
        signalled: whether any signal had to be sent.
        killed: whether SIGKILL was needed (something outlived the grace period).
        members_seen: distinct processes ever attributed to the tree, leader excluded.
        survivors: pids still present when the sweep budget ran out (normally empty).
        swept: distinct processes other than the leader that were still alive when the
            termination began or appeared during it, and were frozen and killed.
    """

    signalled: bool
    killed: bool
    members_seen: int
    survivors: tuple[int, ...]
    swept: int = 0


class ProcessTree:
    """The process tree of one supervised leader. Not thread-safe; one trio task drives it."""

    def __init__(self, leader: Stat) -> None:
        self.leader = leader.pid
        self.leader_start = leader.starttime
        self.sid = leader.sid
        self.self_pid = os.getpid()
        self.self_sid = os.getsid(0)
        self.self_pgid = os.getpgid(0)
        self.known: dict[int, int] = {}
        self.ever: set[tuple[int, int]] = set()
        self.swept: set[tuple[int, int]] = set()
        self.guarded: set[tuple[int, int]] = set()

    def __enter__(self) -> ProcessTree:
        _ACTIVE[self.leader] = self
        guard.watch_session(self.sid)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.pop(self.leader, None)
        guard.forget_session(self.sid)

    def _claims_orphan(self, st: Stat) -> bool:
        if st.sid == self.sid:
            return True
        if st.sid in (self.self_sid,) or st.pgid == self.self_pgid:
            return False
        if st.starttime < self.leader_start:
            return False
        for other in _ACTIVE.values():
            if other is self:
                continue
            if st.sid == other.sid or other.known.get(st.pid) == st.starttime:
                return False
        return True

    def refresh(self) -> dict[int, Stat]:
        """Current members (running or not yet reaped), leader included if still listed."""
        table = {st.pid: st for st in scan()}
        by_parent: dict[int, list[int]] = {}
        for st in table.values():
            by_parent.setdefault(st.ppid, []).append(st.pid)
        roots: list[int] = []
        leader = table.get(self.leader)
        if leader is not None and leader.starttime == self.leader_start:
            roots.append(self.leader)
        for pid, start in list(self.known.items()):
            seen = table.get(pid)
            if seen is None or seen.starttime != start:
                del self.known[pid]
            else:
                roots.append(pid)
        for st in table.values():
            if st.pid in (self.leader, self.self_pid) or st.pid <= 1:
                continue
            if st.sid == self.sid or (
                st.ppid == self.self_pid and st.pid not in _ACTIVE and self._claims_orphan(st)
            ):
                roots.append(st.pid)
        members: dict[int, Stat] = {}
        while roots:
            pid = roots.pop()
            if pid in members or pid == self.self_pid:
                continue
            members[pid] = table[pid]
            roots.extend(by_parent.get(pid, ()))
        for pid, st in members.items():
            if pid != self.leader:
                self.known[pid] = st.starttime
                self.ever.add((pid, st.starttime))
                if st.sid != self.sid and (pid, st.starttime) not in self.guarded:
                    # Outside the session (also one that left it after we first saw it).
                    self.guarded.add((pid, st.starttime))
                    guard.watch_process(self.sid, pid, st.starttime)
        return members

    def reap(self, members: dict[int, Stat]) -> None:
        """Reap exited members whose parent is the factory (never the leader: trio does)."""
        for pid, st in members.items():
            if pid != self.leader and st.exited and st.ppid == self.self_pid:
                reap_if_zombie_child(pid)

    def pending(self, members: dict[int, Stat]) -> list[int]:
        """Members not yet gone: running ones, and zombies nobody has reaped yet.

        The leader's zombie is excluded: the runner collects its status through trio.
        """
        return [pid for pid, st in members.items() if not (pid == self.leader and st.exited)]

    def signal(self, members: dict[int, Stat], sig: signal.Signals) -> None:
        """Send ``sig`` to every process group of the tree, then to every member pid."""
        running = [st for st in members.values() if not st.exited]
        groups = {st.pgid for st in running}
        groups.discard(self.self_pgid)
        for pgid in _leader_first(groups, self.leader):
            if pgid > 1:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, sig)
        for st in running:
            if st.pid > 1 and st.pid != self.self_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(st.pid, sig)
        self.swept.update((st.pid, st.starttime) for st in running if st.pid != self.leader)

    def _stop_all_but_leader(self, members: dict[int, Stat]) -> list[Stat]:
        """SIGSTOP the members that still run (the leader excepted); returns them."""
        running = [
            st
            for pid, st in members.items()
            if pid != self.leader and not st.exited and st.state not in _STOPPED
        ]
        leader = members.get(self.leader)
        leader_group = leader.pgid if leader is not None else self.leader
        for pgid in {st.pgid for st in running} - {leader_group, self.self_pgid}:
            if pgid > 1:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGSTOP)
        for st in running:
            if st.pid > 1 and st.pid != self.self_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(st.pid, signal.SIGSTOP)
        self.swept.update((st.pid, st.starttime) for st in running)
        return running

    async def freeze(self, *, budget_s: float = 0.5, pause_s: float = 0.001) -> dict[int, Stat]:
        """Stop every member but the leader; re-scan until a scan finds all of them stopped
        (or exited) and no new member, or ``budget_s`` ran out (a process in the kernel's
        uninterruptible sleep stops only when it leaves it). Returns the last scan."""
        end = trio.current_time() + budget_s
        previous: set[int] | None = None
        while True:
            members = self.refresh()
            self.reap(members)
            running = self._stop_all_but_leader(members)
            if (not running and set(members) == previous) or trio.current_time() >= end:
                return members
            previous = set(members)
            await trio.sleep(pause_s if running else 0)

    async def terminate(
        self,
        *,
        grace_s: float,
        leader_running: bool = True,
        poll_s: float = 0.02,
        kill_budget_s: float = 5.0,
    ) -> SweepReport:
        """Freeze → (SIGTERM to the leader, ``grace_s``) → SIGKILL rounds until nothing of
        the tree remains (see the module docstring). ``leader_running=False``: the leader
        exited by itself, so there is no grace.

        Uses :func:`trio.sleep` between checks; callers shield it from cancellation.
        Returns a :class:`SweepReport`; ``survivors`` is non-empty only if the tree
        outlived ``kill_budget_s`` of SIGKILL rounds (a process stuck in the kernel).
        """
        members = self.refresh()
        self.reap(members)
        if not self.pending(members):
            return self._report(False, False, ())
        members = await self.freeze()
        leader = members.get(self.leader)
        if leader_running and leader is not None and not leader.exited:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.leader, signal.SIGTERM)
            grace_end = trio.current_time() + grace_s
            while trio.current_time() < grace_end:
                await trio.sleep(min(poll_s, max(0.0, grace_end - trio.current_time())))
                members = self.refresh()
                self.reap(members)
                self._stop_all_but_leader(members)
                if not self.pending(members):
                    return self._report(True, False, ())
                leader = members.get(self.leader)
                if leader is None or leader.exited:
                    break  # the leader is done: the frozen rest is killed now
        kill_end = trio.current_time() + kill_budget_s
        while True:
            members = self.refresh()
            self.signal(members, signal.SIGKILL)
            await trio.sleep(poll_s / 4)
            members = self.refresh()
            self.reap(members)
            left = self.pending(members)
            if not left:
                return self._report(True, True, ())
            if trio.current_time() >= kill_end:
                return self._report(True, True, tuple(sorted(left)))

    def _report(self, signalled: bool, killed: bool, survivors: tuple[int, ...]) -> SweepReport:
        return SweepReport(
            signalled=signalled,
            killed=killed,
            members_seen=len(self.ever),
            survivors=survivors,
            swept=len(self.swept),
        )


def _leader_first(groups: Iterable[int], leader: int) -> list[int]:
    return sorted(groups, key=lambda g: (g != leader, g))

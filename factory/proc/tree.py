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
   Past :data:`KILL_BUDGET_S` the rounds go on only while the tree still changes (a fork
   chain keeps making new members), up to :data:`HUNT_BUDGET_S`; a tree still left then
   stays with the guard (:mod:`factory.proc.guard`).

Freeze, grace and kill rounds find members with :meth:`ProcessTree.descend` (the
factory's own children and ``/proc/<pid>/task/*/children``: cost grows with the tree, not
the system; a full scan under load took seconds while a chain forked thousands of links),
and a full :meth:`ProcessTree.refresh` confirms "gone" before it is declared.

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
from factory.proc.procfs import (
    Stat,
    children_of,
    children_supported,
    read_stat,
    reap_if_zombie_child,
    scan,
)

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
        self.gave_up = False  # the last termination left survivors

    def __enter__(self) -> ProcessTree:
        _ACTIVE[self.leader] = self
        guard.watch_session(self.sid)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.pop(self.leader, None)
        if not self.gave_up:
            guard.forget_session(self.sid)
        # else the guard keeps the session and every identity it was told, and takes
        # them down when the factory exits, however it exits

    def _guard(self, pid: int, start: int) -> None:
        if (pid, start) not in self.guarded:
            self.guarded.add((pid, start))
            guard.watch_process(self.sid, pid, start)

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
            if st.sid == self.sid or self._claims_child(st):
                roots.append(st.pid)
        members: dict[int, Stat] = {}
        while roots:
            pid = roots.pop()
            if pid in members or pid == self.self_pid:
                continue
            members[pid] = table[pid]
            roots.extend(by_parent.get(pid, ()))
        self._note(members)
        return members

    def descend(self) -> dict[int, Stat]:
        """Current members, found child by child instead of by a full ``/proc`` scan.

        Starts from the leader, the members seen before and the orphans re-parented to
        the factory, and follows ``/proc/<pid>/task/*/children``; the factory's own
        children are read again after every walk (a member that exited meanwhile left
        its children to us). The cost grows with the tree, not with the system, so a
        round keeps pace with a fork chain on a machine with thousands of processes. It
        cannot see a member of the leader's session that is no descendant of the factory
        (possible only with the subreaper switch off): :meth:`refresh` can, and every
        termination confirms with it before it declares the tree gone.
        """
        if not children_supported():
            return self.refresh()
        stack: list[tuple[int, str]] = [(self.leader, "leader")]
        stack += [(pid, "known") for pid in self.known]
        members: dict[int, Stat] = {}
        looked: set[int] = set()
        while True:
            fresh = children_of(self.self_pid) - looked - _ACTIVE.keys()
            if not fresh and not stack:
                break
            looked |= fresh
            stack += [(pid, "orphan") for pid in fresh]
            while stack:
                pid, how = stack.pop()
                if pid in members or pid == self.self_pid or pid <= 1:
                    continue
                st = read_stat(pid)
                if st is None or not self._belongs(st, how):
                    if how == "known":
                        self.known.pop(pid, None)
                    continue
                members[pid] = st
                stack += [(child, "child") for child in children_of(pid)]
        self._note(members)
        return members

    def _belongs(self, st: Stat, how: str) -> bool:
        if how == "leader":
            return st.starttime == self.leader_start
        if how == "known":
            return self.known.get(st.pid) == st.starttime
        if how == "orphan":
            return st.sid == self.sid or self._claims_child(st)
        return True  # a child of a member

    def _claims_child(self, st: Stat) -> bool:
        """An orphan re-parented to the factory that this tree takes (module docstring)."""
        return st.ppid == self.self_pid and st.pid not in _ACTIVE and self._claims_orphan(st)

    def _note(self, members: dict[int, Stat]) -> None:
        """Remember the members (pid reuse guarded) and tell the guard about outsiders."""
        for pid, st in members.items():
            if pid != self.leader:
                self.known[pid] = st.starttime
                self.ever.add((pid, st.starttime))
                if st.sid != self.sid:
                    # Outside the session (also one that left it after we first saw it).
                    self._guard(pid, st.starttime)

    def reap(self, members: dict[int, Stat]) -> int:
        """Reap exited members whose parent is the factory (never the leader: trio does),
        dropping each reaped one from ``members`` (the scan saw its zombie; it is gone now).

        Returns how many were reaped. A scan that reaped something saw the tree act since
        the previous one — a fork chain leaves one zombie per link, even when the scan
        missed the link alive — so the tree is not known to be quiet yet.
        """
        reaped = 0
        for pid, st in list(members.items()):
            ours = pid != self.leader and st.exited and st.ppid == self.self_pid
            if ours and reap_if_zombie_child(pid):
                del members[pid]
                reaped += 1
        return reaped

    def quiet(self, members: dict[int, Stat], reaped: int) -> bool:
        """Nothing of the tree is left in this scan, and it reaped nothing new."""
        return not reaped and not self.pending(members)

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
        """Stop every member but the leader; re-scan (:meth:`descend`) until a scan finds
        all of them stopped (or exited) and no new member, confirmed by a full
        :meth:`refresh`, or ``budget_s`` ran out (a process in the kernel's uninterruptible
        sleep stops only when it leaves it). Returns the last scan."""
        end = trio.current_time() + budget_s
        previous: set[int] | None = None
        confirmed = False
        while True:
            members = self.refresh() if confirmed else self.descend()
            self.reap(members)
            running = self._stop_all_but_leader(members)
            settled = not running and set(members) == previous
            if (settled and confirmed) or trio.current_time() >= end:
                return members
            confirmed = settled
            previous = set(members)
            await trio.sleep(pause_s if running else 0)

    def _confirm(self) -> tuple[dict[int, Stat], int]:
        """A full scan, reaping: what :meth:`descend` cannot see, before "gone"."""
        members = self.refresh()
        return members, self.reap(members)

    async def _grace(self, grace_s: float, poll_s: float) -> bool:
        """SIGTERM to the leader alone, then up to ``grace_s`` for it to exit while new
        members are frozen as they appear. True when nothing of the tree is left."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.leader, signal.SIGTERM)
        grace_end = trio.current_time() + grace_s
        while trio.current_time() < grace_end:
            await trio.sleep(min(poll_s, max(0.0, grace_end - trio.current_time())))
            members = self.descend()
            reaped = self.reap(members)
            self._stop_all_but_leader(members)
            if self.quiet(members, reaped) and self.quiet(*self._confirm()):
                return True
            leader = members.get(self.leader)
            if leader is None or leader.exited:
                return False  # the leader is done: the frozen rest is killed now
        return False

    async def _kill_rounds(self, budget_s: float, hunt_s: float, poll_s: float) -> list[int]:
        """SIGKILL rounds until nothing of the tree is left; the pids left when they gave
        up (empty: all gone). A round that finds a process never seen before (a new link
        of a fork chain) goes again at once. Past ``budget_s`` the rounds go on while the
        tree still changes — a new member, a reaped zombie, another set of pids left —
        within the last :data:`STUCK_S`, up to ``hunt_s`` in all: a chain is hunted, and
        a process that merely does not die (stuck in the kernel) is not waited for."""
        t0 = progress = trio.current_time()
        before: set[int] = set()
        while True:
            seen = len(self.ever)
            members = self.descend()
            reaped = self.reap(members)
            self.signal(members, signal.SIGKILL)
            if self.quiet(members, reaped):
                members, reaped = self._confirm()
                if self.quiet(members, reaped):
                    return []
            left = set(self.pending(members))
            now, new = trio.current_time(), len(self.ever) > seen
            if new or reaped or left != before:
                progress = now
            before = left
            if now - t0 >= max(budget_s, hunt_s) or (
                now - t0 >= budget_s and now - progress >= STUCK_S
            ):
                return sorted(left)
            await trio.sleep(0 if new else poll_s / 4)

    async def terminate(
        self,
        *,
        grace_s: float,
        leader_running: bool = True,
        poll_s: float = 0.02,
        kill_budget_s: float | None = None,
        hunt_budget_s: float | None = None,
    ) -> SweepReport:
        """Freeze → (SIGTERM to the leader, ``grace_s``) → SIGKILL rounds until nothing of
        the tree remains (see the module docstring). ``leader_running=False``: the leader
        exited by itself, so there is no grace.

        Uses :func:`trio.sleep` between checks; callers shield it from cancellation.
        Returns a :class:`SweepReport`; ``survivors`` is non-empty only if the tree
        outlived the SIGKILL rounds (:data:`KILL_BUDGET_S`, extended up to
        :data:`HUNT_BUDGET_S` while the tree still forks). A tree left with survivors
        stays with the guard when it is closed (:meth:`__exit__`).
        """
        for _ in range(_SETTLE_SCANS):  # zombies of children that exited before the leader
            members = self.refresh()
            reaped = self.reap(members)
            if self.quiet(members, reaped):
                return self._report(False, False, ())
            if self.pending(members):
                break
        members = await self.freeze()
        leader = members.get(self.leader)
        running = leader_running and leader is not None and not leader.exited
        if running and await self._grace(grace_s, poll_s):
            return self._report(True, False, ())
        kill = KILL_BUDGET_S if kill_budget_s is None else kill_budget_s
        hunt = HUNT_BUDGET_S if hunt_budget_s is None else hunt_budget_s
        left = await self._kill_rounds(kill, hunt, poll_s)
        self.gave_up = bool(left)
        return self._report(True, True, tuple(left))

    def _report(self, signalled: bool, killed: bool, survivors: tuple[int, ...]) -> SweepReport:
        return SweepReport(
            signalled=signalled,
            killed=killed,
            members_seen=len(self.ever),
            survivors=survivors,
            swept=len(self.swept),
        )


#: Scans that may each reap a zombie before a tree with nothing pending counts as not quiet
#: (a fork chain then goes through freeze and kill like any running tree).
_SETTLE_SCANS = 3
#: Seconds of SIGKILL rounds before a tree that no longer acts counts as surviving.
KILL_BUDGET_S = 5.0
#: Seconds of SIGKILL rounds in all while the tree still acts (a fork chain under load).
HUNT_BUDGET_S = 60.0
#: Past the kill budget, a tree that did not change for this long counts as stuck.
STUCK_S = 0.5


def _leader_first(groups: Iterable[int], leader: int) -> list[int]:
    return sorted(groups, key=lambda g: (g != leader, g))

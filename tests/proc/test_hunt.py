"""A tree that outruns the kill rounds is still hunted, and what survives stays with the
guard (SPEC P-1). Observed before: under load a fork chain in new sessions outran every
SIGKILL round of a full-``/proc``-scan sweep; the runner raised ``sweep-incomplete``, told
the guard to forget the session, and nothing hunted the chain afterwards.

The decision tests script a tree's scans (no process is signalled) under trio's
``MockClock``; the real ones run a fork chain whose program ends by itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid

import pytest
import trio
import trio.testing

from factory.proc import RunSpec, guard, run, tree
from factory.proc.procfs import Stat, become_subreaper, children_of, read_stat
from factory.proc.tree import ProcessTree
from tests.proc.helpers import PY
from tests.support.proc_tree import FORK_CHAIN, tagged

LEADER = Stat(pid=4_000_000, state="Z", ppid=1, pgid=4_000_000, sid=4_000_000, starttime=7)


class Scripted(ProcessTree):
    """A tree whose every scan is the next entry of ``rounds`` (member pids, all running,
    in the leader's session), then the last entry for ever; signals go nowhere."""

    def __init__(self, rounds: list[list[int]], clock: trio.testing.MockClock) -> None:
        super().__init__(LEADER)
        self.rounds, self.scans, self.clock = rounds, 0, clock

    def _scan(self) -> dict[int, Stat]:
        pids = self.rounds[min(self.scans, len(self.rounds) - 1)]
        self.scans += 1
        self.clock.jump(0.001)  # a scan takes time
        members = {p: Stat(p, "R", 1, p, LEADER.sid, 100 + p) for p in pids}
        self._note(members)
        return members

    def descend(self) -> dict[int, Stat]:
        return self._scan()

    def refresh(self) -> dict[int, Stat]:
        return self._scan()

    def reap(self, members: dict[int, Stat]) -> int:
        return 0

    def signal(self, members: dict[int, Stat], sig: signal.Signals) -> None:
        pass


def hunt(rounds: list[list[int]], budget_s: float, hunt_s: float) -> tuple[list[int], float]:
    """The pids left by the kill rounds over the scripted ``rounds``, and the mock time."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    scripted = Scripted(rounds, clock)

    async def main() -> tuple[list[int], float]:
        t0 = trio.current_time()
        left = await scripted._kill_rounds(budget_s, hunt_s, poll_s=0.02)
        return left, trio.current_time() - t0

    return trio.run(main, clock=clock)


def test_a_chain_still_forking_past_the_kill_budget_is_hunted_until_gone() -> None:
    chain = [[1000 + i] for i in range(500)] + [[]]  # a new link every round, then none
    left, _ = hunt(chain, budget_s=0.0, hunt_s=60.0)
    assert left == []


def test_twin_a_process_that_does_not_die_is_not_waited_for_past_the_budget() -> None:
    left, took = hunt([[1000]], budget_s=1.0, hunt_s=60.0)
    assert left == [1000] and took < 1.1  # given up at the kill budget, not the hunt's


def test_the_hunt_itself_is_bounded() -> None:
    endless = [[1000 + i] for i in range(100_000)]
    left, took = hunt(endless, budget_s=0.0, hunt_s=3.0)
    assert left and 3.0 <= took < 3.1


@pytest.mark.parametrize("gave_up", [True, False])
def test_a_tree_left_with_survivors_stays_with_the_guard(
    monkeypatch: pytest.MonkeyPatch, gave_up: bool
) -> None:
    told: list[str] = []
    monkeypatch.setattr(guard, "watch_session", lambda sid: told.append(f"s {sid}"))
    monkeypatch.setattr(guard, "forget_session", lambda sid: told.append(f"e {sid}"))
    with ProcessTree(LEADER) as t:
        t.gave_up = gave_up
    wanted = [f"s {LEADER.sid}"] + ([] if gave_up else [f"e {LEADER.sid}"])
    assert told == wanted


def _zombie_children() -> set[int]:
    """Our own exited, unreaped children (a fork chain leaves one per link)."""
    found = set()
    for pid in children_of(os.getpid()):
        st = read_stat(pid)
        if st is not None and st.exited:
            found.add(pid)
    return found


def test_the_zombie_count_sees_an_unreaped_child() -> None:
    """Negative control of the count below: an exited child we did not reap is counted."""
    before = _zombie_children()
    child = subprocess.Popen([PY, "-c", ""], stdin=subprocess.DEVNULL)
    try:
        while (st := read_stat(child.pid)) is not None and not st.exited:
            os.sched_yield()
        assert _zombie_children() - before == {child.pid}
    finally:
        child.wait()
    assert child.pid not in _zombie_children()


@pytest.mark.parametrize("kill_budget_s", [tree.KILL_BUDGET_S, 0.0])
async def test_a_fork_chain_is_stopped_with_no_zombie_left(
    monkeypatch: pytest.MonkeyPatch, kill_budget_s: float
) -> None:
    """With no kill budget at all only the hunt can stop it (no ``sweep-incomplete``)."""
    monkeypatch.setattr(tree, "KILL_BUDGET_S", kill_budget_s)
    tag = uuid.uuid4().hex
    before = _zombie_children()
    spec = RunSpec(
        argv=[PY, "-c", FORK_CHAIN],
        env={"PATH": "/usr/bin:/bin", "QA_TAG": tag},
        timeout_s=30,
        grace_s=0.3,
    )
    res = await run(spec)
    assert res.sweep.killed and res.sweep.members_seen > 0 and not res.sweep.survivors
    assert _zombie_children() - before == set()
    assert tagged(tag) == []


def test_descend_finds_what_the_full_scan_finds() -> None:
    """A leader, its child in a new session that exits, and the grandchild that is then
    re-parented to us (the subreaper): the walk and the full scan agree."""
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60); os._exit(0)\n"
        "    os._exit(0)\n"
        "os.wait(); print('built', flush=True); time.sleep(60)\n"
    )
    assert become_subreaper()
    tag = uuid.uuid4().hex
    env = {"PATH": "/usr/bin:/bin", "QA_TAG": tag}
    leader = subprocess.Popen(
        [PY, "-c", code], stdout=subprocess.PIPE, start_new_session=True, env=env
    )
    try:
        assert leader.stdout is not None and leader.stdout.readline() == b"built\n"
        st = read_stat(leader.pid)
        assert st is not None
        t = ProcessTree(st)
        full, walked = t.refresh(), t.descend()
        assert set(walked) == set(full) and len(full) == 2  # the leader and the orphan
        assert any(m.ppid == os.getpid() and m.pid != leader.pid for m in walked.values())
    finally:
        killed = tagged(tag)  # killed (and counted) independently of the runner
        leader.wait()
        for pid in killed:  # the orphan is our child: reap it, leave no zombie behind
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    assert len(killed) == 2

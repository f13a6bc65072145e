"""The one hostile process tree used by the supervision tests and ``scripts/bench_supervise``,
and an independent survivor check (psutil, not the runner's own bookkeeping).

``TREE`` runs as ``python -c TREE RECORD LEADER [CHILDREN]``: the leader ignores SIGTERM
and starts CHILDREN (default 2) children, each in a new session; each child starts a
grandchild in another new session, and forks a fresh one each time it receives SIGTERM
(at most four). Every process appends ``[pid, create_time]`` to RECORD as it starts, so a
test can see the tree being built and see SIGTERM arrive (the record grows). Once built,
the leader prints ``tree-built`` and then sleeps forever (LEADER ``sleep``) or exits at once
(``exit``), leaving its descendants behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil

TREE = r"""
import json, os, signal, sys, time
RECORD, LEADER = sys.argv[1], sys.argv[2]
CHILDREN = int(sys.argv[3]) if len(sys.argv) > 3 else 2
def note():
    import psutil
    with open(RECORD, "a") as fh:
        fh.write(json.dumps([os.getpid(), psutil.Process().create_time()]) + "\n")
def child(level):
    if os.fork():
        return
    os.setsid()
    made = [0]
    def on_term(s, f):
        if level == 0 and made[0] < 4:
            made[0] += 1
            child(level + 1)
    signal.signal(signal.SIGTERM, on_term)
    note()
    if level == 0:
        child(level + 1)
    while True:
        time.sleep(0.05)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
note()
for _ in range(CHILDREN):
    child(0)
time.sleep(0.3)
print("tree-built", flush=True)
if LEADER == "exit":
    sys.exit(0)
while True:
    time.sleep(0.05)
"""


def tree_size(children: int = 2) -> int:
    """How many processes a fully built tree has recorded before any SIGTERM."""
    return 1 + 2 * children


def recorded(path: Path) -> list[tuple[int, float]]:
    """The ``(pid, create_time)`` of every process that recorded itself in ``path``."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [(int(pid), float(created)) for pid, created in rows]


def survivors(ids: list[tuple[int, float]]) -> list[int]:
    """Pids from ``ids`` that still exist with the same create time (zombies included)."""
    out = []
    for pid, created in ids:
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) < 0.02:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def tagged(tag: str) -> list[int]:
    """Pids carrying ``tag``; they are killed as well, so a failing test leaks nothing."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("QA_TAG") == tag:
                found.append(proc.pid)
                proc.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


# Each link forks, the parent exits at once and the child starts a new session: at any
# moment the "tree" is one or two short-lived processes in a session nobody has seen.
# The chain ends by itself after two minutes, so a sweep that fails leaves a red test, not
# a machine (or a CI runner) saturated by a fork loop for hours.
FORK_CHAIN = r"""
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
end = time.monotonic() + 120
while time.monotonic() < end:
    if os.fork():
        os._exit(0)
    os.setsid()
"""

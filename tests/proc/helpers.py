"""Small real child programs for runner tests, and an independent survivor check (psutil)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil

PY = sys.executable

# A tree: the leader and two children in new sessions, all ignoring SIGTERM; each child
# forks a fresh grandchild when it receives SIGTERM. Every process appends its identity
# to RECORD. Leader behaviour after building the tree: LEADER ("sleep" | "exit").
TREE = r"""
import json, os, signal, sys, time
RECORD, LEADER = sys.argv[1], sys.argv[2]
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
child(0)
child(0)
time.sleep(0.3)
print("tree-built", flush=True)
if LEADER == "exit":
    sys.exit(0)
while True:
    time.sleep(0.05)
"""


def recorded(path: Path) -> list[tuple[int, float]]:
    if not path.exists():
        return []
    return [tuple(json.loads(line)) for line in path.read_text().splitlines() if line]


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

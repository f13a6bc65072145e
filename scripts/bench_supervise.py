"""Benchmarks for SPEC P-1 supervision; run through ``scripts/bench_supervise``.

1. overhead: median wall time of ``factory.proc.run`` on ``/bin/true`` minus the median of
   ``subprocess.run`` on the same argv (both: empty env, stdin /dev/null, output captured).
   Target: <= 50 ms.
2. teardown (deadline-to-gone): a leader that ignores SIGTERM, with children in new
   sessions that ignore SIGTERM and fork a fresh child on it; deadline D, grace G.
   Measured: time from the deadline until ``run`` raised (every recorded descendant gone,
   checked with psutil). Target: <= G + 1 s.
3. acting after the deadline: the same kind of leader with a grandchild in a new session
   that appends a wall-clock timestamp to a file every millisecond. Measured: how long
   after the deadline its last write happened (the freeze latency). Target: no write
   later than 50 ms after the deadline (the descendants are frozen at once while the
   leader gets its grace).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import trio

from factory.proc import ProcessFailure, RunSpec, run

TREE = r"""
import json, os, signal, sys, time
RECORD = sys.argv[1]
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
for _ in range(3):
    child(0)
while True:
    time.sleep(0.05)
"""


TICKER = r"""
import os, signal, sys, time
OUT = sys.argv[1]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd = os.open(OUT, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    while True:
        os.write(fd, b"%.6f\n" % time.time())
        time.sleep(0.001)
while True:
    time.sleep(0.05)
"""


def survivors(record: Path) -> int:
    left = 0
    for line in record.read_text().splitlines():
        pid, created = json.loads(line)
        try:
            if abs(psutil.Process(pid).create_time() - created) < 0.02:
                left += 1
        except psutil.NoSuchProcess:
            continue
    return left


async def overhead(runs: int) -> dict[str, float]:
    argv = ["/bin/true"]
    bare, supervised = [], []
    for _ in range(3):  # warm caches
        subprocess.run(argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        await run(RunSpec(argv=argv, env={}, timeout_s=10))
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await run(RunSpec(argv=argv, env={}, timeout_s=10))
        supervised.append(time.perf_counter() - t0)
    b, s = statistics.median(bare) * 1000, statistics.median(supervised) * 1000
    return {
        "bare_median_ms": round(b, 2),
        "supervised_median_ms": round(s, 2),
        "overhead_median_ms": round(s - b, 2),
        "runs": runs,
    }


async def _timed_out(program: str, out: Path, deadline_s: float, grace_s: float) -> None:
    """Run ``program OUT`` until its deadline; it must time out."""
    spec = RunSpec(
        argv=[sys.executable, "-c", program, str(out)],
        env={},
        timeout_s=deadline_s,
        grace_s=grace_s,
    )
    try:
        await run(spec)
    except ProcessFailure as exc:
        assert exc.code == "timeout", exc.code


async def teardown(runs: int, deadline_s: float, grace_s: float) -> dict[str, float]:
    after_deadline, members, left = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            record = Path(tmp) / "tree.jsonl"
            t0 = time.perf_counter()
            await _timed_out(TREE, record, deadline_s, grace_s)
            after_deadline.append(time.perf_counter() - t0 - deadline_s)
            members.append(len(record.read_text().splitlines()))
            left += survivors(record)
    return {
        "after_deadline_median_s": round(statistics.median(after_deadline), 3),
        "after_deadline_max_s": round(max(after_deadline), 3),
        "grace_s": grace_s,
        "deadline_s": deadline_s,
        "processes_per_tree_median": statistics.median(members),
        "survivors_total": left,
        "runs": runs,
    }


async def acting_after_deadline(runs: int, deadline_s: float, grace_s: float) -> dict[str, float]:
    lags = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            ticks = Path(tmp) / "ticks"
            t0 = time.time()
            await _timed_out(TICKER, ticks, deadline_s, grace_s)
            last = float(ticks.read_text().split()[-1])
            lags.append((last - (t0 + deadline_s)) * 1000)
    return {
        "last_write_after_deadline_median_ms": round(statistics.median(lags), 1),
        "last_write_after_deadline_max_ms": round(max(lags), 1),
        "runs": runs,
    }


async def main(args: argparse.Namespace) -> dict[str, object]:
    o = await overhead(args.runs)
    print(
        f"overhead: bare {o['bare_median_ms']} ms, supervised {o['supervised_median_ms']} ms,"
        f" +{o['overhead_median_ms']} ms (target <= 50 ms)",
        file=sys.stderr,
    )
    t = await teardown(args.kill_runs, args.deadline, args.grace)
    print(
        f"teardown: all gone {t['after_deadline_median_s']} s after the deadline (median; "
        f"max {t['after_deadline_max_s']} s; target <= grace {args.grace} + 1 s); "
        f"survivors {t['survivors_total']}",
        file=sys.stderr,
    )
    a = await acting_after_deadline(args.kill_runs, args.deadline, args.grace)
    print(
        f"freeze: the last write of a descendant came {a['last_write_after_deadline_median_ms']}"
        f" ms after the deadline (median; max {a['last_write_after_deadline_max_ms']} ms; "
        "target <= 50 ms)",
        file=sys.stderr,
    )
    return {
        "schema": "factory.bench-supervise/1",
        "overhead": o,
        "teardown": t,
        "acting_after_deadline": a,
        "targets_met": o["overhead_median_ms"] <= 50
        and t["after_deadline_max_s"] <= args.grace + 1
        and t["survivors_total"] == 0
        and a["last_write_after_deadline_max_ms"] <= 50,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--kill-runs", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=0.5)
    parser.add_argument("--grace", type=float, default=1.0)
    report = trio.run(main, parser.parse_args())
    print(json.dumps(report, sort_keys=True))
    sys.exit(0 if report["targets_met"] else 1)

"""Fork-chain sweep benchmark (SPEC P-1); run through ``scripts/bench_fork_chain``.

The child forks without pause: each link forks, exits at once, and the new link calls
``setsid`` and ignores SIGTERM, so at any moment the tree is one or two short-lived
processes in a session nobody has seen, re-parented to the factory (a child subreaper).
Every link stops by itself :data:`CHAIN_LIFETIME_S` after the chain started, and every
busy loop of ``--load`` after :data:`BUSY_LIFETIME_S`: nothing this benchmark starts can
run on for hours, whatever happens to the benchmark.

For each run, measured:

* ``stop_s``: wall time of ``factory.proc.run`` (the leader exits at once, so this is the
  time the sweep needed to stop the chain);
* ``outcome``: ``ok``, or the error code (``sweep-incomplete`` = the runner gave up);
* ``zombies_left``: our zombie children right after ``run`` returned, minus before;
* ``still_forking``: whether, during ``--watch`` seconds after ``run`` returned, any live
  process outside our session was our child or our zombie children grew (the chain ran
  on after the runner returned).

``--load N`` starts N busy-loop processes for the duration (a loaded machine);
``--parallel K`` runs K chains at once in this process. Targets: every run ``ok``,
``zombies_left`` 0, ``still_forking`` false. JSON on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

import trio

from factory.proc import ProcessFailure, RunSpec, run
from factory.proc.procfs import children_of, read_stat

CHAIN_LIFETIME_S = 120
BUSY_LIFETIME_S = 1800
FORK_CHAIN = rf"""
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
end = time.monotonic() + {CHAIN_LIFETIME_S}
while time.monotonic() < end:
    if os.fork():
        os._exit(0)
    os.setsid()
"""

BUSY = (
    f"import time\nend = time.monotonic() + {BUSY_LIFETIME_S}\nwhile time.monotonic() < end: pass"
)


def our_children() -> tuple[int, int]:
    """(live children outside our session, zombie children) of this process."""
    me, sid = os.getpid(), os.getsid(0)
    live = zombies = 0
    for pid in children_of(me):
        st = read_stat(pid)
        if st is None:
            continue
        if st.exited:
            zombies += 1
        elif st.sid != sid:
            live += 1
    return live, zombies


async def one(results: list[dict[str, object]]) -> None:
    spec = RunSpec(
        argv=[sys.executable, "-c", FORK_CHAIN],
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=60,
        grace_s=0.3,
    )
    t0 = time.perf_counter()
    outcome = "ok"
    try:
        await run(spec)
    except ProcessFailure as exc:
        outcome = str(exc.code)
    results.append({"stop_s": round(time.perf_counter() - t0, 3), "outcome": outcome})


async def round_(parallel: int, watch_s: float) -> dict[str, Any]:
    _, zombies_before = our_children()
    results: list[dict[str, object]] = []
    async with trio.open_nursery() as nursery:
        for _ in range(parallel):
            nursery.start_soon(one, results)
    live, zombies_after = our_children()
    forking = live > 0
    end = time.monotonic() + watch_s
    while time.monotonic() < end:
        await trio.sleep(0.1)
        live_now, zombies_now = our_children()
        forking = forking or live_now > 0 or zombies_now > zombies_after
    return {
        "runs": results,
        "zombies_left": zombies_after - zombies_before,
        "still_forking": forking,
        "live_children_after": live,
    }


def hunt(seconds: float) -> int:
    """Safety net of the benchmark itself: kill every live child of ours outside our
    session (a chain the runner left running) and reap our zombies, so nothing escapes
    to PID 1 when the benchmark exits. Returns how many processes it had to kill."""
    me, sid, killed, quiet = os.getpid(), os.getsid(0), 0, 0
    end = time.monotonic() + seconds
    while quiet < 3 and time.monotonic() < end:
        found = 0
        for pid in children_of(me):
            st = read_stat(pid)
            if st is not None and st.exited:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            elif st is not None and st.sid != sid:
                found += 1
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        killed += found
        quiet = 0 if found else quiet + 1
        if not found:
            time.sleep(0.05)
    return killed


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    busy = [
        subprocess.Popen([sys.executable, "-c", BUSY], env={}, stdin=subprocess.DEVNULL)
        for _ in range(args.load)
    ]
    rounds: list[dict[str, Any]] = []
    try:
        for i in range(args.rounds):
            r = await round_(args.parallel, args.watch)
            r["load_average"] = load_average()
            r["processes"] = sum(1 for n in os.listdir("/proc") if n.isdigit())
            rounds.append(r)
            print(f"round {i + 1}: {json.dumps(r)}", file=sys.stderr)
    finally:
        hunted = hunt(30.0)
        for p in busy:
            p.kill()
            p.wait()
    runs = [x for r in rounds for x in r["runs"]]
    stops = [float(x["stop_s"]) for x in runs]
    report: dict[str, Any] = {
        "schema": "factory.bench-fork-chain/1",
        "load_average_before": args.load_before,
        "load_processes": args.load,
        "parallel": args.parallel,
        "runs": len(runs),
        "ok": sum(1 for x in runs if x["outcome"] == "ok"),
        "gave_up": sum(1 for x in runs if x["outcome"] != "ok"),
        "stop_s_median": round(statistics.median(stops), 3) if stops else None,
        "stop_s_max": round(max(stops), 3) if stops else None,
        "zombies_left_total": sum(int(r["zombies_left"]) for r in rounds),
        "still_forking_rounds": sum(1 for r in rounds if r["still_forking"]),
        "load_average_max": max((float(r["load_average"]) for r in rounds), default=0.0),
        "benchmark_had_to_kill": hunted,
        "processes_max": max((int(r["processes"]) for r in rounds), default=0),
    }
    report["targets_met"] = (
        report["gave_up"] == 0
        and report["zombies_left_total"] == 0
        and report["still_forking_rounds"] == 0
    )
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--parallel", type=int, default=3, help="chains per round (default 3)")
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes (default 0)")
    parser.add_argument(
        "--watch", type=float, default=2.0, help="seconds watched after each round (default 2)"
    )
    parsed = parser.parse_args()
    parsed.load_before = load_average()
    report = trio.run(main, parsed)
    print(json.dumps(report, sort_keys=True))
    sys.exit(0 if report["targets_met"] else 1)

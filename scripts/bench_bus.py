#!/usr/bin/env python3
"""Benchmarks of the coordination bus (issue 3). Not a test: prints one JSON object.

    scripts/bench_bus [--quick] [--only NAME ...]

Measures, with medians:
  smoke      `factory smoke` end to end as a user runs it (process start, server spawn,
             16 MCP calls, verification), for both transports and both anyio backends
  gaia       time to the report, side by side, of `factory smoke` and the Gaia reference's
             `node scripts/factory-smoke.mjs` (--gaia DIR: a checkout of
             GuitarAlchemist/gaia), interleaved run by run; the ratio factory / Gaia.
             "To the report": from the spawn until --out holds a finished report (Gaia
             reserves it first and lingers after writing it, so its exit is not the mark)
  append     single-writer throughput of fsync'd commits through the bus core
  latency    commit latency on a log of 1,000 vs 100,000 events (one warm process each)
  verify     `factory bus verify` of 25k/50k/100k-event logs: wall time and peak RSS
  writers    8 processes x 500 messages concurrently: ids unique and gap-free, log verifies
Scratch data goes to a temporary folder under state/ (removed afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/ (the shared helpers); scripts/bench_bus runs the venv

from factory.bus.decide import decide  # noqa: E402
from factory.bus.log import LOG_NAME, EventLog  # noqa: E402
from factory.bus.model import VERB_INPUTS  # noqa: E402
from factory.bus.reducer import State, apply  # noqa: E402
from factory.bus.server import handle_call  # noqa: E402
from factory.documents.canonical import canonical_bytes  # noqa: E402

AT = "2026-01-01T00:00:00.000Z"


def synthetic_log(data_dir: Path, events: int) -> None:
    """A valid log of exactly ``events`` lines (send / inbox / ack cycles), written unsynced."""
    data_dir.mkdir(parents=True, exist_ok=True)
    state, out = State(), []

    def add(verb: str, args: dict[str, Any]) -> Any:
        command: Any = VERB_INPUTS[verb].model_validate(args)
        event, result = decide(state, command, AT)
        apply(state, event)
        out.append(canonical_bytes(event.to_json_value()) + b"\n")
        return result

    for name, kind in (("c", "coordinator"), ("w", "worker"), ("r", "reviewer")):
        add("register", {"name": name, "kind": kind})
    text = "a message body of moderate length, as agents write them"
    while len(out) < events:
        sent = add(
            "send",
            {"from": "act-0001", "to": "act-0002", "text": text, "correlationId": "cor-0001"}
            if state.correlations
            else {"from": "act-0001", "to": "act-0002", "text": text},
        )
        add("inbox", {"actor": "act-0002", "limit": 1})
        add("ack", {"actor": "act-0002", "messageId": sent["messageId"]})
    (data_dir / LOG_NAME).write_bytes(b"".join(out[:events]))


def bench_smoke(scratch: Path, runs: int) -> dict[str, Any]:
    """Wall time and CPU time (user+sys of the smoke and its reaped server) per variant.

    Variants are interleaved run by run, so a change in machine load hits all of them.
    """
    variants = [("prespawned", "asyncio"), ("prespawned", "trio"), ("sdk-stdio", "asyncio")]
    walls: dict[str, list[float]] = {f"{t}/{b}": [] for t, b in variants}
    cpus: dict[str, list[float]] = {f"{t}/{b}": [] for t, b in variants}
    for n in range(runs):
        for transport, backend in variants:
            key = f"{transport}/{backend}"
            d = scratch / f"smoke-{transport}-{backend}-{n}"
            env = dict(os.environ, FACTORY_SMOKE_TRANSPORT=transport, FACTORY_SMOKE_BACKEND=backend)
            t = time.perf_counter()
            proc = subprocess.Popen(
                [
                    str(REPO / ".venv/bin/factory"),
                    "smoke",
                    "--data-dir",
                    str(d),
                    "--artifact",
                    str(REPO / "README.md"),
                    "--out",
                    str(scratch / f"{d.name}.json"),
                    "--task",
                    "Review this candidate",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
            )
            _, status, usage = os.wait4(proc.pid, 0)  # Linux: includes the reaped server
            walls[key].append(time.perf_counter() - t)
            cpus[key].append(usage.ru_utime + usage.ru_stime)
            assert os.waitstatus_to_exitcode(status) == 0, key
    return {
        key: {
            "median_wall_s": round(statistics.median(walls[key]), 3),
            "median_cpu_s": round(statistics.median(cpus[key]), 3),
            "wall_runs_s": [round(x, 3) for x in walls[key]],
        }
        for key in walls
    }


def _finished(out: Path) -> bool:
    try:
        doc = json.loads(out.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("status") not in (None, "running")


def _time_to_report(argv: list[str], out: Path, deadline_s: float = 60.0) -> float:
    """Seconds from the spawn until ``out`` holds a finished report; the process group is
    then stopped (a lingering child is not the report's time)."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while not _finished(out):
            if proc.poll() is not None and not _finished(out):
                raise RuntimeError(f"{argv[0]} exited {proc.returncode} without a report")
            if time.perf_counter() - t > deadline_s:
                raise RuntimeError(f"{argv[0]}: no report within {deadline_s} s")
            time.sleep(0.002)
        return time.perf_counter() - t
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
        proc.wait()


def bench_gaia(scratch: Path, runs: int, gaia: Path) -> dict[str, Any]:
    """``factory smoke`` and Gaia's ``factory-smoke.mjs`` to their reports, interleaved."""
    times: dict[str, list[float]] = {"factory": [], "gaia": []}
    artifact, task = str(REPO / "README.md"), "Review this candidate"
    for n in range(runs):
        for who in ("factory", "gaia"):
            d, out = scratch / f"side-{who}-{n}", scratch / f"side-{who}-{n}.json"
            prog = (
                [str(REPO / ".venv/bin/factory"), "smoke"]
                if who == "factory"
                else ["node", str(gaia / "scripts" / "factory-smoke.mjs")]
            )
            argv = [*prog, "--data-dir", str(d), "--artifact", artifact, "--out", str(out)]
            times[who].append(_time_to_report([*argv, "--task", task], out))
    med = {who: statistics.median(v) for who, v in times.items()}
    return {
        "factory_median_s": round(med["factory"], 3),
        "gaia_median_s": round(med["gaia"], 3),
        "ratio_factory_over_gaia": round(med["factory"] / med["gaia"], 2),
        "runs_s": {who: [round(x, 3) for x in v] for who, v in times.items()},
        "target_ratio": 1.0,
    }


def bench_append(scratch: Path, count: int) -> dict[str, Any]:
    d = scratch / "append"
    d.mkdir()
    log = EventLog(d)
    actor = handle_call(log, "register", {"name": "a", "kind": "worker"})[1]["ref"]
    t = time.perf_counter()
    for i in range(count):
        err, _ = handle_call(log, "send", {"from": actor, "to": actor, "text": f"m{i}"})
        assert not err
    elapsed = time.perf_counter() - t
    return {
        "events": count,
        "seconds": round(elapsed, 3),
        "events_per_s": round(count / elapsed),
        "fsync": True,
    }


def _latency(d: Path, appends: int) -> float:
    log = EventLog(d)
    log.state()  # the one full replay of a cold process; excluded from the per-commit latency
    samples = []
    for i in range(appends):
        t = time.perf_counter()
        err, _ = handle_call(log, "send", {"from": "act-0001", "to": "act-0002", "text": f"x{i}"})
        samples.append(time.perf_counter() - t)
        assert not err
    assert log.stats["full"] == 1 and log.stats["tail"] == 0
    return statistics.median(samples)


def bench_latency(scratch: Path, appends: int) -> dict[str, Any]:
    out = {}
    for size in (1_000, 100_000):
        d = scratch / f"lat-{size}"
        synthetic_log(d, size)
        out[f"median_ms_at_{size}"] = round(_latency(d, appends) * 1000, 3)
    out["ratio_100k_over_1k"] = round(out["median_ms_at_100000"] / out["median_ms_at_1000"], 2)
    return out


def bench_verify(scratch: Path, runs: int) -> dict[str, Any]:
    out = {}
    for size in (25_000, 50_000, 100_000):
        d = scratch / f"verify-{size}"
        synthetic_log(d, size)
        times, rss = [], []
        for _ in range(runs):
            # Through /usr/bin/time: a child's ru_maxrss starts at its parent's RSS at fork,
            # and this benchmark process is large; time(1) is tiny, so %M is verify's own.
            t = time.perf_counter()
            proc = subprocess.run(
                [
                    "/usr/bin/time",
                    "-f",
                    "%M",
                    sys.executable,
                    "-m",
                    "factory",
                    "bus",
                    "verify",
                    "--data-dir",
                    str(d),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=REPO,
            )
            times.append(time.perf_counter() - t)
            assert proc.returncode == 0, proc.stderr.decode()
            rss.append(int(proc.stderr.decode().split()[-1]) / 1024)
        out[str(size)] = {
            "median_s": round(statistics.median(times), 3),
            "peak_rss_mb": round(max(rss), 1),
            "bytes": (d / LOG_NAME).stat().st_size,
        }
    return out


def bench_writers(scratch: Path, processes: int, count: int) -> dict[str, Any]:
    from factory.bus.verify import verify
    from tests.bus.helpers import run_appenders

    d = scratch / "writers"
    t = time.perf_counter()
    ids = run_appenders(d, processes, count)
    elapsed = time.perf_counter() - t
    expected = [f"msg-{n:04d}" for n in range(1, processes * count + 1)]
    report = verify(d)
    return {
        "processes": processes,
        "messages_each": count,
        "seconds": round(elapsed, 2),
        "commits_per_s": round((processes * count + 2 * processes) / elapsed),
        "ids_unique_and_gap_free": sorted(ids) == expected and len(set(ids)) == len(ids),
        "log_verifies": report.ok,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--only", nargs="*", default=None, help="smoke gaia append latency verify writers"
    )
    parser.add_argument("--gaia", type=Path, help="a checkout of GuitarAlchemist/gaia (gaia)")
    parser.add_argument("--runs", type=int, help="repetitions (default 7, --quick 3)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    wanted = set(args.only or ["smoke", "append", "latency", "verify", "writers"])
    (REPO / "state").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-bus-", dir=REPO / "state"))
    out: dict[str, Any] = {
        "command": " ".join(["scripts/bench_bus", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        if "smoke" in wanted:
            out["smoke"] = bench_smoke(scratch, runs)
        if "gaia" in wanted:
            if args.gaia is None:
                parser.error("gaia: pass --gaia DIR (a checkout of GuitarAlchemist/gaia)")
            out["gaia"] = bench_gaia(scratch, runs, args.gaia.resolve())
        if "append" in wanted:
            out["append"] = bench_append(scratch, 1000 if args.quick else 3000)
        if "latency" in wanted:
            out["latency"] = bench_latency(scratch, 200 if args.quick else 500)
        if "verify" in wanted:
            out["verify"] = bench_verify(scratch, 1 if args.quick else 3)
        if "writers" in wanted:
            out["writers"] = bench_writers(scratch, 8, 500)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the decision gate (issue 14, "Speed").

Targets on the 2-core machine:

* evaluate a scenario of 10,000 conditions in 1,000 stages ≤ 100 ms (the pure evaluator
  over an admitted snapshot of 10,000 records; the RFC 8785 digest of the resulting trace,
  needed only to accept it, is reported beside it);
* ≥ 200 durable accepts/s (SQLite WAL, synchronous=FULL, one compare-and-swap transaction
  per accept);
* ``gate verify`` with replay of 10,000 evaluations ≤ 3 s;
* peak RSS < 200 MB for each part.

Usage: ``scripts/bench_gate [--reps N] [--evaluations N] [--accepts N] [--part P]``. Each
part runs in a fresh child process so its peak RSS is its own; the report is one JSON
object on stdout.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOW = "2026-01-01T00:10:00Z"


def big_scenario(stages: int = 1000, per_stage: int = 10) -> bytes:
    """1,000 stages of 10 conditions each: ten chains of 100 with forks and diamonds."""
    conditions, stage_list = [], []
    for s in range(stages):
        ids = [f"c{s}_{i}" for i in range(per_stage)]
        for i, cid in enumerate(ids):
            kind, op, operand = [
                ("integer", "equals", 0),
                ("decimal", "ge", 0.5),
                ("boolean", "equals", False),
                ("string", "contains", "ok"),
            ][i % 4]
            conditions.append(
                {"id": cid, "domain": {"kind": kind}, "predicate": op, "operand": operand}
            )
        stage: dict[str, Any] = {
            "id": f"s{s}",
            "complete": {
                "all": [
                    ids[0],
                    {"any": ids[1:4]},
                    {"quorum": {"k": 3, "of": ids[4:9]}},
                    {"not": ids[9]},
                ]
            },
        }
        if s >= 10:
            deps = [f"s{s - 10}"] + ([f"s{s - 9}"] if s % 3 == 0 else [])
            stage["after"] = {"all": deps}
        stage_list.append(stage)
    doc = {
        "schema": "factory.gate-scenario/1",
        "id": "bench",
        "params": [],
        "conditions": conditions,
        "stages": stage_list,
        "completion": {"law": {"all": [f"s{s}" for s in range(stages - 10, stages)]}},
    }
    return json.dumps(doc).encode()


def _observation(cond: str, value: Any) -> bytes:
    from tests.gate.helpers import observation  # the same builder the tests use

    return observation(cond, value)


def part_evaluate(reps: int) -> dict[str, Any]:
    from factory.gate.evaluate import evaluate
    from factory.gate.evidence import admit
    from factory.gate.scenario import load_bytes
    from factory.gate.state import GENESIS_PREV, genesis, make_entry, start_body
    from factory.gate.values import parse_instant

    t = time.perf_counter()
    sc = load_bytes(big_scenario(), "json")
    load_s = time.perf_counter() - t
    values = [0, 0.75, False, "all ok"]
    t = time.perf_counter()
    # local index 9 is negated in each stage's law: give it a value that makes it false
    records = [
        admit(
            f"e-{cid}",
            _observation(cid, values[(i % 10) % 4] if i % 10 != 9 else 0.25),
            conditions=sc.conditions,
            ingress="submitted",
        )
        for i, cid in enumerate(sc.conditions)
    ]
    admit_s = time.perf_counter() - t
    state = genesis(sc, make_entry("r", 0, GENESIS_PREV, start_body(sc, {})))
    now = parse_instant(NOW)
    times, cpu, digest_times = [], [], []
    cand = None
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        cand = evaluate(sc, state, records, now)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        t = time.perf_counter()
        _ = cand.digest
        digest_times.append(time.perf_counter() - t)
    assert cand is not None
    return {
        "conditions": len(sc.conditions),
        "stages": len(sc.stages),
        "records": len(records),
        "completed_stages": len(cand.delta["complete"]),
        "scenario_complete": cand.delta["scenario_complete"],
        "evaluate_median_s": statistics.median(times),
        "evaluate_min_s": min(times),
        "evaluate_cpu_median_s": statistics.median(cpu),
        "evaluate_cpu_min_s": min(cpu),
        "digest_median_s": statistics.median(digest_times),
        "scenario_load_s": load_s,
        "admit_10000_s": admit_s,
        "target_evaluate_s": 0.100,
    }


def _small_gate(folder: Path, durable: bool) -> Any:
    import sqlite3

    from factory.gate.scenario import load_bytes
    from factory.gate.service import Gate
    from factory.gate.store import SqliteStore

    class Fast:  # setup only: the timed accepts use the real synchronous=FULL store
        def __init__(self, real: sqlite3.Connection) -> None:
            self.real = real

        def execute(self, sql: str, params: Any = ()) -> Any:
            return self.real.execute(
                "PRAGMA synchronous=OFF" if sql == "PRAGMA synchronous=FULL" else sql, params
            )

        def close(self) -> None:
            self.real.close()

    def connect(path: str) -> Any:
        real = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        return real if durable else Fast(real)

    doc = {
        "schema": "factory.gate-scenario/1",
        "id": "small",
        "params": [],
        "conditions": [
            {"id": "a", "domain": {"kind": "integer"}, "predicate": "equals", "operand": 0},
            {"id": "b", "domain": {"kind": "integer"}, "predicate": "equals", "operand": 0},
        ],
        "stages": [{"id": "s", "complete": {"all": ["a", "b"]}}],
        "completion": {"law": "s"},
    }
    clock = iter(range(1_767_225_600 * 10**9, 1_767_225_600 * 10**9 + 10**15, 10**6))
    gate = Gate(SqliteStore(folder / "gate.sqlite3", connect=connect), clock=lambda: next(clock))
    run, _ = gate.start("r1", load_bytes(json.dumps(doc).encode(), "json"), {})
    gate.submit(run, "ea", _observation("a", 0))
    return gate, run


def part_accept(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        gate, run = _small_gate(Path(tmp), durable=True)
        t = time.perf_counter()
        for _ in range(count):
            result = gate.accept(run, gate.derive(run))
            assert result.outcome == "committed" and result.run is not None
            run = result.run
        elapsed = time.perf_counter() - t
        mode = gate.store._db.execute("PRAGMA journal_mode").fetchone()[0]
        sync = gate.store._db.execute("PRAGMA synchronous").fetchone()[0]
    return {
        "accepts": count,
        "seconds": elapsed,
        "accepts_per_s": count / elapsed,
        "journal_mode": mode,
        "synchronous": sync,
        "includes": "derive + CAS accept",
        "target_accepts_per_s": 200,
    }


def part_verify(evaluations: int) -> dict[str, Any]:
    from factory.gate.runpack import export
    from factory.gate.verify import verify

    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        gate, run = _small_gate(Path(tmp), durable=False)
        for _ in range(evaluations):
            run = gate.accept(run, gate.derive(run)).run
        pack = Path(tmp) / "pack"
        export(gate, run, pack)
        t, c = time.perf_counter(), time.process_time()
        report = verify(pack, now=time.time_ns())
        elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    assert report["ok"], report
    return {
        "evaluations_replayed": report["properties"]["replay_agreement"]["checked"],
        "verify_s": elapsed,
        "verify_cpu_s": cpu,
        "target_s": 3.0,
    }


def _child(part: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [
        sys.executable,
        __file__,
        "--part",
        part,
        "--reps",
        str(args.reps),
        "--evaluations",
        str(args.evaluations),
        "--accepts",
        str(args.accepts),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--reps", type=int, default=5, help="evaluations timed (median)")
    parser.add_argument(
        "--evaluations", type=int, default=10_000, help="accepted evaluations to replay"
    )
    parser.add_argument("--accepts", type=int, default=500, help="durable accepts timed")
    parser.add_argument("--part", choices=("evaluate", "accept", "verify"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        run = {
            "evaluate": lambda: part_evaluate(args.reps),
            "accept": lambda: part_accept(args.accepts),
            "verify": lambda: part_verify(args.evaluations),
        }[args.part]
        out = run()
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return 0
    report = {part: _child(part, args) for part in ("evaluate", "accept", "verify")}
    report["target_peak_rss_mib"] = 200
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

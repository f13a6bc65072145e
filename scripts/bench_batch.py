"""Benchmark ``factory batch`` on the rehearsal route (issues 26 and 27, "Speed").

Measured, each in fresh processes, on one sample repository:

* ``single_s``: one ``factory agent --repo --rehearsal`` run, end to end (median of 3);
* ``serial_s``: N such runs one after the other (N × single, measured);
* ``batch_jobs1_s`` / ``batch_jobs2_s``: ``factory batch run`` of the same N tasks with
  ``--jobs 1`` and ``--jobs 2``;
* ``overhead_per_task_s``: what the batch adds per task over a single run,
  ``batch_jobs1_s / N - single_s`` (target: at most the single run's own overhead, 0.63 s);
* ``parallel_ratio``: ``batch_jobs2_s / serial_s`` (target ≤ 0.6 on 2 cores);
* with ``--engine temporal``: ``temporal_s`` for the same batch on a local Temporal dev
  server with one worker of two slots, and ``temporal_overhead_per_task_s``
  = ``(temporal_s - batch_jobs2_s) / N`` (target ≤ 1 s).

Usage: ``scripts/bench_batch [--tasks N] [--engine local|temporal]``; one JSON object on
stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.bench import isolate  # noqa: E402

SCENARIO = ROOT / "factory" / "rehearsal" / "scenarios" / "demo.json"
FACTORY = [sys.executable, "-m", "factory"]


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo


def _timed(argv: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True, timeout=3600)
    return time.monotonic() - start


def _single(tmp: Path, repo: Path, i: int) -> float:
    out = tmp / f"single-{i}.json"
    argv = [*FACTORY, "agent", "--repo", str(repo), "--task", "add greet()", "--out", str(out)]
    return _timed([*argv, "--rehearsal", str(SCENARIO), "--progress", "jsonl"])


def _tasks(tmp: Path, n: int) -> Path:
    path = tmp / "tasks.toml"
    lines = ['schema = "factory.batch-tasks/1"']
    for i in range(n):
        lines += ["[[tasks]]", f'id = "t{i:03d}"', f'task = "add greet() ({i})"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _batch(tmp: Path, repo: Path, tasks: Path, name: str, *extra: str) -> float:
    argv = [*FACTORY, "batch", "run", str(tasks), "--repo", str(repo), "--out", str(tmp / name)]
    argv += ["--rehearsal", str(SCENARIO), "--progress", "jsonl", "--min-free-mb", "0", *extra]
    return _timed(argv)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _temporal(tmp: Path, repo: Path, tasks: Path) -> float:
    bare = tmp / "remote.git"
    _git(tmp, "clone", "-q", "--bare", str(repo), str(bare))
    _git(repo, "remote", "add", "origin", str(bare))
    port = _free_port()
    cli = Path(sys.executable).parent / "temporal"
    server = subprocess.Popen(
        [str(cli), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
         "--ui-port", str(_free_port()), "--metrics-port", str(_free_port()), "--headless",
         "--db-filename", str(tmp / "t.sqlite"), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    worker = None
    try:
        time.sleep(5)
        worker = subprocess.Popen(
            [*FACTORY, "worker", "--temporal", f"127.0.0.1:{port}", "--jobs", "2",
             "--workdir", str(tmp / "work")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(2)
        return _batch(tmp, repo, tasks, "temporal-out", "--engine", "temporal",
                      "--temporal", f"127.0.0.1:{port}")  # fmt: skip
    finally:
        for proc in (worker, server):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--engine", choices=("local", "temporal"), default="local")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="factory-bench-batch-"))
    try:
        isolate(tmp)
        repo = _repo(tmp)
        n = args.tasks
        single = statistics.median(_single(tmp, repo, i) for i in range(3))
        serial = sum(_single(tmp, repo, 10 + i) for i in range(n))
        tasks = _tasks(tmp, n)
        jobs1 = _batch(tmp, repo, tasks, "jobs1", "--jobs", "1")
        jobs2 = _batch(tmp, repo, tasks, "jobs2", "--jobs", "2")
        report: dict[str, object] = {
            "tasks": n,
            "cores": os.cpu_count(),
            "single_s": round(single, 3),
            "serial_s": round(serial, 3),
            "batch_jobs1_s": round(jobs1, 3),
            "batch_jobs2_s": round(jobs2, 3),
            "overhead_per_task_s": round(jobs1 / n - single, 3),
            "parallel_ratio": round(jobs2 / serial, 3),
        }
        if args.engine == "temporal":
            remote = _temporal(tmp, repo, tasks)
            report["temporal_s"] = round(remote, 3)
            report["temporal_overhead_per_task_s"] = round((remote - jobs2) / n, 3)
        print(json.dumps(report))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Cost of observation (SPEC A-9, A-10): time on the run's path and time added to the exit.

Prints medians over repeated runs for: a progress record (jsonl, to memory); the four
phase calls of a telemetry observer (the hot path); and its close() against a healthy
loopback OTLP receiver, a refused port and a collector that accepts and never answers.
Run from the checkout: scripts/bench_observers
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))  # scripts/bench_observers runs this with the checkout's venv

from factory.agent.progress import ProgressObserver  # noqa: E402
from factory.agent.telemetry import TelemetryObserver  # noqa: E402
from tests.support.otlp import http_receiver, refused_port, silent_listener  # noqa: E402

PHASES = ("worker", "initial_review", "repair", "final_review")


def progress_us(n: int = 2000) -> float:
    obs = ProgressObserver("jsonl", io.StringIO(), 600000)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        obs.stage("worker_running", remaining_invocations=4)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def telemetry(url: Callable[[], str], n: int) -> tuple[float, float, float]:
    hot, close = [], []
    for _ in range(n):
        obs = TelemetryObserver(url())
        t0 = time.perf_counter()
        for phase in PHASES:
            obs.phase_started(phase)  # type: ignore[arg-type]
            obs.phase_ended(phase, outcome="ok", duration_ms=1)  # type: ignore[arg-type]
        hot.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        obs.close(outcome="completed", exit_code=0)
        close.append(time.perf_counter() - t1)
    return statistics.median(hot) * 1e3, statistics.median(close) * 1e3, max(close) * 1e3


def main() -> None:
    argparse.ArgumentParser(
        prog="bench_observers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    ).parse_args()
    print(f"progress record (jsonl)          median {progress_us():8.1f} us")
    row = "telemetry {:<8} 4 phases median {:6.2f} ms | close median {:6.1f} ms, max {:6.1f} ms"
    with http_receiver() as (port, _):
        print(row.format("healthy", *telemetry(lambda: f"http://127.0.0.1:{port}", 15)))
    print(row.format("refused", *telemetry(lambda: f"http://127.0.0.1:{refused_port()}", 15)))
    with silent_listener() as port:
        print(row.format("hung", *telemetry(lambda: f"http://127.0.0.1:{port}", 5)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark ``factory digest`` against the floor (and a reference implementation).

Generates two trees in a temporary folder -- LARGE: ~500 MB in ~2,000 files; SMALL:
100,000 files of 1-8 KiB -- then times, side by side and interleaved, with several
repetitions on a warm page cache:

* ``factory digest --root TREE``
* the floor ``find TREE -type f -print0 | sort -z | xargs -0 sha256sum`` (LC_ALL=C),
  built from real pipes, no shell
* ``CMD --root TREE`` when ``--reference CMD`` is given (split like a shell would, never
  run through one)

For each it reports the median and minimum wall time, the ratio of medians to the floor,
the median CPU time (user+sys of the command and of every process it waited for: a
measure of work that load on a shared machine disturbs less than wall time), and peak
RSS: the largest single process of the command (``%M`` of GNU ``/usr/bin/time``, which
wraps every process of every contender; ``ru_maxrss`` seen from this Python process would
include the bench's own memory, inherited across fork) and, from one extra untimed run
sampled with psutil every 20 ms, the peak of the summed RSS of the whole process tree
(forked workers share pages copy-on-write, so the sum over-counts). ``--also-single``
adds ``factory`` with ``FACTORY_DIGEST_WORKERS=1`` as a contender. Once per tree it checks
that factory's digest equals the recipe applied to the floor's own ``sha256sum`` output.

Targets (issue 2): <= 1.1x the floor on LARGE, <= 1.3x on SMALL, peak RSS < 150 MB.

Usage: scripts/bench_digest [--reps 5] [--workdir DIR] [--reference CMD] [--only large|small]
                            [--also-single] [--keep] [--large-mb 500] [--large-files 2000]
                            [--small-files 100000]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
KIB = 1024
MIB = 1024 * KIB


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def factory_command() -> list[str]:
    venv = HERE / ".venv" / "bin" / "factory"
    if venv.exists():
        return [str(venv), "digest"]
    return [sys.executable, "-m", "factory", "digest"]


# --- trees ------------------------------------------------------------------------------


def _pool(size: int) -> bytes:
    return random.Random(7).randbytes(size)  # noqa: S311 (test data, not secrets)


def make_large(root: Path, total_mb: int, files: int) -> None:
    rng = random.Random(1)  # noqa: S311 (test data, not secrets)
    weights = [rng.uniform(0.2, 1.8) for _ in range(files)]
    scale = total_mb * MIB / sum(weights)
    pool = _pool(16 * MIB)
    for i, w in enumerate(weights):
        size = int(w * scale)
        folder = root / f"d{i % 20:02d}" / f"e{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"file-{i:05d}.bin", "wb") as fh:
            fh.write(i.to_bytes(8, "little"))
            remaining = size - 8
            offset = (i * 4099) % MIB
            while remaining > 0:
                piece = pool[offset : offset + min(remaining, 8 * MIB)]
                fh.write(piece)
                remaining -= len(piece)
                offset = 0


def make_small(root: Path, files: int) -> None:
    rng = random.Random(2)  # noqa: S311 (test data, not secrets)
    pool = _pool(1 * MIB)
    for i in range(files):
        folder = root / f"p{i % 100:02d}" / f"q{(i // 100) % 10}"
        if i < 1000:
            folder.mkdir(parents=True, exist_ok=True)
        size = rng.randint(1 * KIB, 8 * KIB)
        offset = rng.randrange(0, MIB - size)
        with open(folder / f"f{i:06d}.txt", "wb") as fh:
            fh.write(i.to_bytes(8, "little") + pool[offset : offset + size - 8])


# --- running ----------------------------------------------------------------------------

GNU_TIME = "/usr/bin/time"


class Rss:
    """Wraps argv in GNU time so each process's own peak RSS (KiB) lands in a file."""

    def __init__(self) -> None:
        self.files: list[str] = []

    def wrap(self, argv: list[str]) -> list[str]:
        if not os.path.exists(GNU_TIME):
            return argv
        fd, path = tempfile.mkstemp(prefix="bench-rss-")
        os.close(fd)
        self.files.append(path)
        return [GNU_TIME, "-f", "%M", "-o", path, *argv]

    def peak(self, fallback: int) -> int:
        if not self.files:
            return fallback
        best = 0
        for path in self.files:
            with open(path) as fh:
                text = fh.read().strip().splitlines()
            os.unlink(path)
            best = max(best, int(text[-1]) * KIB)
        return best


def _rss_of_tree(pid: int, stop: threading.Event, peak: list[int]) -> None:
    import psutil

    try:
        top = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        total = 0
        try:
            for p in [top, *top.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        except psutil.Error:
            break
        peak[0] = max(peak[0], total)
        stop.wait(0.02)


Run = tuple[float, int, int, bytes, float]


def _cpu(usage: object) -> float:
    return float(usage.ru_utime + usage.ru_stime)  # type: ignore[attr-defined]


def run_floor(tree: Path, sample: bool = False) -> Run:
    """Time the floor pipeline: (seconds, max single RSS, peak tree RSS, stdout, CPU s)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    meter = Rss()
    start = time.perf_counter()
    find = subprocess.Popen(
        meter.wrap(["find", str(tree), "-type", "f", "-print0"]), stdout=subprocess.PIPE, env=env
    )
    sort = subprocess.Popen(
        meter.wrap(["sort", "-z"]), stdin=find.stdout, stdout=subprocess.PIPE, env=env
    )
    assert find.stdout is not None and sort.stdout is not None
    find.stdout.close()
    xargs = subprocess.Popen(
        meter.wrap(["xargs", "-0", "sha256sum"]),
        stdin=sort.stdout,
        stdout=subprocess.PIPE if sample else subprocess.DEVNULL,
        env=env,
    )
    sort.stdout.close()
    out = b""
    if sample:
        assert xargs.stdout is not None
        out = xargs.stdout.read()
    rss = 0
    cpu = 0.0
    for proc in (find, sort, xargs):
        _, status, usage = os.wait4(proc.pid, 0)
        cpu += _cpu(usage)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"floor step {proc.args!r} failed with {proc.returncode}")
        rss = max(rss, usage.ru_maxrss * KIB)
    elapsed = time.perf_counter() - start
    return elapsed, meter.peak(rss), 0, out, cpu


def run_command(argv: list[str], sample: bool = False, env: dict[str, str] | None = None) -> Run:
    """Time one command: (seconds, max single-process RSS, peak tree RSS, stdout, CPU s)."""
    meter = Rss()
    start = time.perf_counter()
    proc = subprocess.Popen(
        meter.wrap(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    stop = threading.Event()
    peak = [0]
    sampler = None
    if sample:
        sampler = threading.Thread(target=_rss_of_tree, args=(proc.pid, stop, peak))
        sampler.start()
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    stop.set()
    if sampler is not None:
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {err.decode(errors='replace')}")
    return elapsed, meter.peak(usage.ru_maxrss * KIB), peak[0], out, _cpu(usage)


def digest_from_floor(tree: Path, floor_out: bytes) -> str:
    """The recipe applied to sha256sum's own lines (ASCII names: byte order = UTF-16)."""
    lines = []
    for raw in floor_out.decode().splitlines():
        hexd, path = raw.split("  ", 1)
        rel = os.path.relpath(path, tree)
        lines.append((rel.encode("utf-16-be"), f"{rel}|{os.path.getsize(path)}|{hexd}"))
    lines.sort()
    return hashlib.sha256("\n".join(text for _, text in lines).encode()).hexdigest()


def bench_tree(
    name: str, tree: Path, reps: int, reference: list[str] | None, also_single: bool
) -> list[str]:
    ours_argv = [*factory_command(), "--root", str(tree)]
    contenders: dict[str, object] = {
        "factory": lambda sample=False: run_command(ours_argv, sample),
        "floor": lambda sample=False: run_floor(tree, sample),
    }
    if also_single:
        single_env = {**os.environ, "FACTORY_DIGEST_WORKERS": "1"}
        contenders["factory-1w"] = lambda sample=False: run_command(
            ours_argv, sample, env=single_env
        )
    if reference:
        contenders["reference"] = lambda sample=False: run_command(
            [*reference, "--root", str(tree)], sample
        )
    log(f"[{name}] correctness check and warm-up")
    fout = run_floor(tree, sample=True)[3]
    _, _, tree_rss_factory, out, _ = contenders["factory"](True)  # type: ignore[operator]
    ours = out.decode().strip().splitlines()[-1].split()[-1]
    theirs = digest_from_floor(tree, fout)
    if ours != theirs:
        raise SystemExit(f"[{name}] digest mismatch: factory {ours} vs floor-derived {theirs}")
    tree_rss = {"factory": tree_rss_factory, "floor": 0}
    if also_single:
        tree_rss["factory-1w"] = contenders["factory-1w"](True)[2]  # type: ignore[operator]
    if reference:
        _, _, tree_rss["reference"], rout, _ = contenders["reference"](True)  # type: ignore[operator]
        if ours not in rout.decode():
            log(f"[{name}] WARNING: reference output does not contain {ours}")
    times: dict[str, list[float]] = {k: [] for k in contenders}
    cpus: dict[str, list[float]] = {k: [] for k in contenders}
    rss: dict[str, int] = dict.fromkeys(contenders, 0)
    for rep in range(reps):
        order = list(contenders) if rep % 2 == 0 else list(reversed(contenders))
        for key in order:
            seconds, single, _, _, cpu = contenders[key]()  # type: ignore[operator]
            times[key].append(seconds)
            cpus[key].append(cpu)
            rss[key] = max(rss[key], single)
        done = ", ".join(f"{k} {times[k][-1]:.3f}s" for k in times)
        log(f"[{name}] rep {rep + 1}/{reps}: {done}")
    floor_median = statistics.median(times["floor"])
    rows = []
    for key in contenders:
        med = statistics.median(times[key])
        tree_part = f"{tree_rss[key] / MIB:7.1f}" if tree_rss.get(key) else "      -"
        rows.append(
            f"{name:<6} {key:<10} {med:8.3f} {min(times[key]):8.3f} {med / floor_median:6.2f}x "
            f"{statistics.median(cpus[key]):7.3f} {rss[key] / MIB:8.1f} {tree_part}   "
            + " ".join(f"{t:.3f}" for t in times[key])
        )
    rows.append(f"{name:<6} digest     {ours}")
    return rows


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workdir", default=None, help="where the trees go (default: $TMPDIR)")
    parser.add_argument("--reference", default=None, help="reference command, e.g. 'node inv.mjs'")
    parser.add_argument("--only", choices=["large", "small"], default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated trees")
    parser.add_argument(
        "--also-single", action="store_true", help="also time factory with one worker"
    )
    parser.add_argument("--large-mb", type=int, default=500)
    parser.add_argument("--large-files", type=int, default=2000)
    parser.add_argument("--small-files", type=int, default=100_000)
    args = parser.parse_args()
    reference = shlex.split(args.reference) if args.reference else None
    # SIGTERM/SIGHUP (a timeout, a closed terminal) would otherwise end the process without
    # running the clean-up below and leave ~600 MB of trees behind; as SystemExit they
    # unwind through it. A command being timed is not waited for: it fails on the vanished
    # tree (or already got the signal with its process group).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    work = Path(tempfile.mkdtemp(prefix="bench-digest-", dir=args.workdir))
    rows = []
    try:
        plan = [args.only] if args.only else ["large", "small"]
        for name in plan:
            tree = work / name
            started = time.perf_counter()
            log(f"[{name}] generating under {tree}")
            if name == "large":
                make_large(tree, args.large_mb, args.large_files)
            else:
                make_small(tree, args.small_files)
            log(f"[{name}] generated in {time.perf_counter() - started:.1f}s")
            rows += bench_tree(name, tree, args.reps, reference, args.also_single)
            if not args.keep:
                shutil.rmtree(tree)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    workers = os.environ.get("FACTORY_DIGEST_WORKERS", "auto")
    print(
        f"# bench_digest: {args.reps} reps, warm cache, cpus={len(os.sched_getaffinity(0))}, "
        f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"FACTORY_DIGEST_WORKERS={workers}"
    )
    print("# tree   command      median      min  ratio  cpu_s maxRSS_MB treeRSS_MB  all runs (s)")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

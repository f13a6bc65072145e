"""Benchmarks for review transactions (issue 12); run through ``scripts/bench_review``.

1. start: ``factory review start`` on a candidate of CHANGED modified files in a repository
   of FILES committed files (target: <= 2 s for 5,000 in 50,000). Timed as the real CLI
   (a new process each run, the store removed between runs so every run creates the
   lineage) and in-process (``factory.review.service.start``).
2. finalize: ``factory review finalize --lineage ID --result R…(4) --evidence E`` from a
   freshly started high-risk lineage to approved (six compare-and-swap commits and the
   receipt; target: <= 200 ms), in-process and as the CLI; the CLI also with pydantic's
   plugins allowed and with a private bytecode cache (``cli_variants_s``), and the floor
   under it as new processes (``floor_s``: the interpreter, pydantic with one model, the
   finalize path's imports as the CLI makes them and bare).
3. load: ``ReviewStore.load`` of a lineage whose state holds 500 findings, revalidated
   completely (target: <= 20 ms), median of LOADS loads.
4. peak RSS of each CLI run (``ru_maxrss`` of the waited child; target: < 200 MB).
5. gates (issue 13; ``scripts/bench_review_gates.py``): ``validate --gate pre-commit`` on a
   repository of GATE_FILES files with GATE_CHANGED changed (target: <= 150 ms, as a ratio
   to ``git write-tree`` there) and ``--gate pre-push`` after committing (<= 200 ms).

The repository is generated with ``git fast-import`` in a temporary folder and removed at
the end (also on SIGTERM/SIGHUP).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="bench",
    GIT_AUTHOR_EMAIL="bench@factory.invalid",
    GIT_COMMITTER_NAME="bench",
    GIT_COMMITTER_EMAIL="bench@factory.invalid",
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, env=ENV, input=stdin, capture_output=True, check=True
    ).stdout


def make_repo(root: Path, files: int) -> Path:
    """A repository with ``files`` committed files (100 per folder) via fast-import."""
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    chunks = [b"commit refs/heads/main\n", b"committer bench <b@x> 1700000000 +0000\n"]
    chunks.append(b"data 4\ninit\n")
    for i in range(files):
        body = "".join(f"line {j} of file {i}\n" for j in range(8)).encode()
        chunks.append(b"M 100644 inline src/d%04d/f%05d.py\n" % (i // 100, i))
        chunks.append(b"data %d\n%s\n" % (len(body), body))
    _git(repo, "fast-import", "--quiet", stdin=b"".join(chunks))
    _git(repo, "reset", "-q", "--hard", "main")
    return repo


def change(repo: Path, changed: int) -> None:
    for i in range(changed):
        path = repo / "src" / f"d{i // 100:04d}" / f"f{i:05d}.py"
        path.write_text(path.read_text().replace("line 3 ", "line three "))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Clock:
    """Wall and CPU seconds (this process and every child it waited for) of one block."""

    def __enter__(self) -> Clock:
        self.t0, self.c0, self.k0 = time.perf_counter(), time.process_time(), _children_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0 + _children_cpu() - self.k0


def _stats(clocks: list[Clock], scale: float = 1.0) -> dict[str, float]:
    walls = [c.wall * scale for c in clocks]
    cpus = [c.cpu * scale for c in clocks]
    return {
        "wall_median": statistics.median(walls),
        "wall_min": min(walls),
        "cpu_median": statistics.median(cpus),
    }


def cli(
    args: list[str], cwd: Path, stdin: bytes = b"", env: dict[str, str] | None = None
) -> tuple[Clock, int, dict[str, Any]]:
    """Wall and CPU time, peak RSS (KiB) of the child, and its JSON output (or its exit
    code when it printed none)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    clock = Clock().__enter__()
    proc = subprocess.run(
        [str(HERE / ".venv" / "bin" / "factory"), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        check=False,
        env=env,
    )
    clock.__exit__()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 3):
        raise SystemExit(f"bench: {' '.join(args[:2])} failed: {proc.stderr.decode()[-400:]}")
    if not proc.stdout.strip():  # a gate as a hook runs it: one line, no document
        return clock, max(peak, before), {"exit_code": proc.returncode}
    return clock, max(peak, before), json.loads(proc.stdout)


def store_of(repo: Path) -> Path:
    return repo / ".git" / "factory" / "review" / "v1"


def bench_start(repo: Path, runs: int) -> dict[str, Any]:
    from factory.review.service import start

    walls: list[Clock] = []
    rss: list[int] = []
    inproc: list[Clock] = []
    for _ in range(runs):
        shutil.rmtree(store_of(repo), ignore_errors=True)
        clock, peak, doc = cli(["review", "start", "--cwd", str(repo)], repo)
        assert doc["action"] == "created"
        walls.append(clock)
        rss.append(peak)
    for _ in range(runs):
        shutil.rmtree(store_of(repo), ignore_errors=True)
        with Clock() as clock:
            start(repo, base_ref=None, focus=None, policy_path=None)
        inproc.append(clock)
    return {
        "cli_s": _stats(walls),
        "in_process_s": _stats(inproc),
        "cli_peak_rss_mib": max(rss) / 1024,
        "risk": doc["risk"]["level"],
        "changed_lines": doc["counts"]["changed_lines"],
    }


def _results(tmp: Path) -> list[str]:
    out = []
    for lens in ("risk", "resilience", "readability", "reliability"):
        path = tmp / f"{lens}.json"
        path.write_text(json.dumps({"findings": [], "evidence": [f"read the diff for {lens}"]}))
        out.append(str(path))
    return out


def bench_finalize(repo: Path, tmp: Path, runs: int) -> dict[str, Any]:
    from factory.review.finalize import FinalizeArgs, finalize
    from factory.review.service import open_context

    results = _results(tmp)
    evidence = tmp / "evidence.txt"
    evidence.write_bytes(b"suite: 1000 passed\n")
    walls: list[Clock] = []
    rss: list[int] = []
    inproc: list[Clock] = []
    for mode in ("cli", "in-process"):
        for _ in range(runs):
            args = _finalize_args(repo, results, evidence)
            if mode == "cli":
                clock, peak, doc = cli(args, repo)
                assert doc["state"] == "approved", doc
                walls.append(clock)
                rss.append(peak)
                continue
            lineage = args[args.index("--lineage") + 1]
            fargs = FinalizeArgs(
                lineage=lineage, results=tuple(Path(r) for r in results), evidence=str(evidence)
            )
            with Clock() as clock:
                view, _ = finalize(open_context(repo), fargs)
            inproc.append(clock)
            assert view["state"] == "approved"
    return {
        "in_process_s": _stats(inproc),
        "cli_s": _stats(walls),
        "cli_peak_rss_mib": max(rss) / 1024,
        "commits": len(view["applied"]),
        "cli_variants_s": _finalize_variants(repo, tmp, results, evidence, runs),
    }


def _finalize_args(repo: Path, results: list[str], evidence: Path) -> list[str]:
    from factory.review.service import start

    shutil.rmtree(store_of(repo), ignore_errors=True)
    lineage = start(repo, base_ref=None, focus=None, policy_path=None)["lineage"]
    args = ["review", "finalize", "--cwd", str(repo), "--lineage", lineage]
    return args + [x for r in results for x in ("--result", r)] + ["--evidence", str(evidence)]


def _finalize_variants(
    repo: Path, tmp: Path, results: list[str], evidence: Path, runs: int
) -> dict[str, Any]:
    """The same finalize CLI under two environment changes (a breakdown of ``cli_s``, which
    runs in the environment as given): pydantic plugins allowed (``PYDANTIC_DISABLE_PLUGINS``
    set empty, so pydantic's own loader scans the entry points; by default factory loads
    none and skips the scan, see factory/pydantic_setup.py), and Python's bytecode cache in
    a private ``PYTHONPYCACHEPREFIX`` filled by one warm-up run (``scripts/setup``
    byte-compiles factory, so this differs from ``cli_s`` only if that was skipped)."""
    cache = tmp / "pycache"
    warm = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache))
    warm.pop("PYTHONDONTWRITEBYTECODE", None)
    cli(_finalize_args(repo, results, evidence), repo, env=warm)
    variants = {
        "plugins_allowed": dict(os.environ, PYDANTIC_DISABLE_PLUGINS=""),
        "bytecode_cached": dict(os.environ, PYTHONPYCACHEPREFIX=str(cache)),
    }
    out: dict[str, Any] = {"bytecode_written": not sys.flags.dont_write_bytecode}
    for name, env in variants.items():
        clocks = []
        for _ in range(runs):
            clock, _, doc = cli(_finalize_args(repo, results, evidence), repo, env=env)
            assert doc["state"] == "approved", doc
            clocks.append(clock)
        out[name] = _stats(clocks)
    return out


_IMPORTS = "import factory.cli.main, factory.cli.review_cmd, factory.review.finalize"
#: New processes that bound the finalize CLI from below: the interpreter alone, pydantic
#: with one model, and every module the finalize path imports (without doing anything) as
#: the CLI imports them (no plugin scan, the collector paused: factory/pydantic_setup.py,
#: factory/cli/collector.py) and, for comparison, bare.
FLOOR = {
    "interpreter": "pass",
    "pydantic_one_model": "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int",
    "finalize_imports": (
        "from factory.pydantic_setup import disable_plugins\n"
        "from factory.cli.collector import imports_settled\n"
        f"disable_plugins()\nwith imports_settled():\n    {_IMPORTS}"
    ),
    "finalize_imports_bare": _IMPORTS,
}


def bench_floor(runs: int) -> dict[str, Any]:
    """Wall and CPU of each :data:`FLOOR` process (median of ``runs``, interleaved)."""
    clocks: dict[str, list[Clock]] = {name: [] for name in FLOOR}
    python = str(HERE / ".venv" / "bin" / "python")
    for _ in range(runs):
        for name, code in FLOOR.items():
            with Clock() as clock:
                subprocess.run([python, "-c", code], check=True, cwd=HERE)
            clocks[name].append(clock)
    return {name: _stats(c) for name, c in clocks.items()}


def bench_load(tmp: Path, loads: int) -> dict[str, Any]:
    from factory.review import machine
    from factory.review.store import ReviewStore
    from tests.review import builders as b

    s = b.started(level="high")
    per_lens: dict[str, list[dict[str, Any]]] = {
        lens: [
            b.finding(f"src/payments/charge.py:{i + 1}", claim=f"{lens} claim {i} " * 4)
            if i % 5
            else b.finding(
                f"src/payments/charge.py:{i + 1}",
                severity="WARNING",
                evidence_class=None,
                causal=None,
                claim=f"{lens} note {i}",
            )
            for i in range(125)
        ]
        for lens in s.lenses
    }
    s = machine.apply(b.record_all(s, per_lens), machine.CompleteReview(None))
    store = ReviewStore(tmp / "load-common")
    store.replace(None, b.started(level="high"))
    store.replace(store.load(s.lineage_id).revision, s)
    times: list[Clock] = []
    for _ in range(loads):
        with Clock() as clock:
            loaded = store.load(s.lineage_id)
        times.append(clock)
    size = (store.root / s.lineage_id / "review-state.json").stat().st_size
    return {
        "findings": len(loaded.state.findings()),
        "record_bytes": size,
        "load_ms": _stats(times, scale=1000.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_review",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--files", type=int, default=50_000, help="committed files")
    parser.add_argument("--changed", type=int, default=5_000, help="modified files")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing")
    parser.add_argument("--loads", type=int, default=50, help="loads of the 500-finding state")
    parser.add_argument("--gate-files", type=int, default=10_000, help="gates: committed files")
    parser.add_argument("--gate-changed", type=int, default=100, help="gates: modified files")
    parser.add_argument(
        "--only", choices=("all", "transactions", "gates"), default="all", help="which part"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-review-"))

    def _cleanup(signum: int, frame: object) -> None:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _cleanup)
    try:
        report: dict[str, Any] = {"schema": "factory.bench-review/1"}
        if args.only in ("all", "transactions"):
            t0 = time.perf_counter()
            repo = make_repo(tmp, args.files)
            change(repo, args.changed)
            setup = time.perf_counter() - t0
            report.update(
                {
                    "files": args.files,
                    "changed": args.changed,
                    "setup_s": setup,
                    "start": bench_start(repo, args.runs),
                    "finalize": bench_finalize(repo, tmp, args.runs),
                    "floor_s": bench_floor(max(args.runs, 5)),
                    "load": bench_load(tmp, args.loads),
                    "targets": {
                        "start_s": 2.0,
                        "finalize_s": 0.2,
                        "load_ms": 20.0,
                        "peak_rss_mib": 200,
                    },
                }
            )
        if args.only in ("all", "gates"):
            from bench_review_gates import bench_gates

            this = sys.modules[__name__]
            report["gates"] = bench_gates(this, tmp, args.gate_files, args.gate_changed, args.runs)
        report["load_average"] = list(os.getloadavg())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

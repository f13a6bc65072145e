"""Benchmark the agent run's own work with instant fake providers (issue 5, "Speed and memory").

Targets on the 2-core machine: a full four-call cycle (worker → REQUEST_CHANGES → repair →
APPROVE) over a worktree of 10,000 files / 100 MB including ``node_modules`` in ≤ 2 s;
binding the whole tree of 100,000 files in ≤ 3 s; peak RSS < 300 MB.

Also the git-directory binding's cost (issue 8 §1: at most 50 ms added per binding over the
former allow-list, on a repository with 50,000 objects and 5,000 refs;
``scripts/bench_agent_gitbind.py``).

Per-file cost (issue 25, "Speed"): ``--only scale --files 1000,10000,50000`` runs the same
cycle over repositories of those many files (half tracked, half ignored ``node_modules``;
``--file-bytes`` each, 2 KiB by default) and reports, per size, the median time and the
whole-tree passes (counted as ``tests/support/passes.py`` defines them), and the least-squares
line through the medians: fixed seconds + microseconds per file, for wall and CPU time
(CPU includes git's; it is the steadier figure on a loaded machine). ``--baseline DIR``
(an older tree, e.g. ``git archive <commit> | tar -x -C DIR``) runs that tree's cycle
alternately with this one's on the same fixtures, for a before/after comparison.

Usage: ``scripts/bench_agent [--reps N] [--only cycle|bind|git-bind|scale] [--files N,N,..]
[--dir DIR] [--keep]``.
Each measurement runs in a fresh child process so its peak RSS is its own; the report is
one JSON object on stdout (medians in seconds — the git binding's in milliseconds — peak
RSS in MiB of the Python process and of its largest git child).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_agent_gitbind as gitbind  # noqa: E402 (after the path set-up above)

CYCLE_FILES = 10_000  # half tracked source, half ignored node_modules
CYCLE_BYTES = 100 * 1024 * 1024
BIND_FILES = 100_000
BIND_BYTES = 100 * 1024 * 1024


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _fill(folder: Path, count: int, total: int, tag: str) -> None:
    size = total // count
    block = (tag.encode() * (size // len(tag) + 1))[:size]
    for i in range(count):
        sub = folder / f"d{i // 500:03d}"
        if i % 500 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:06d}.txt").write_bytes(block[:-12] + f"{i:011d}\n".encode())


def prepare_cycle(base: Path, files: int = CYCLE_FILES, total: int = CYCLE_BYTES) -> Path:
    """A repository with a linked worktree: ``files`` / 2 tracked files + as many in
    node_modules (5,000 + 5,000 by default), ``total`` bytes in all."""
    repo = gitbind.new_repo(base / "repo")
    (repo / ".gitignore").write_text("node_modules/\n")
    _fill(repo / "src", files // 2, total // 2, "source ")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    wt = base / "wt"
    _git(repo, "worktree", "add", "-q", "-b", "work", str(wt))
    _fill(wt / "node_modules", files // 2, total // 2, "module ")
    return wt


def prepare_bind(base: Path) -> Path:
    tree = base / "bindtree"
    _fill(tree / "node_modules", BIND_FILES // 2, BIND_BYTES // 2, "dep ")
    _fill(tree / "src", BIND_FILES // 2, BIND_BYTES // 2, "src ")
    return tree


def one_cycle(wt: Path, out: Path) -> dict[str, float]:
    import trio

    from factory.agent.admission import AgentRequest
    from factory.agent.run import AgentDeps, run_agent
    from factory.provider_api import ProviderResult, SubscriptionRoute, Verdict

    provider_s = 0.0

    class Agent:
        name = "claude"

        async def run_agent(self, *, role: str, worktree: Path, **_: object) -> ProviderResult:
            nonlocal provider_s
            t = time.perf_counter()
            target = worktree / "src" / "d000" / f"{role}.txt"
            target.write_text(f"{role} change\n")
            provider_s += time.perf_counter() - t
            return ProviderResult("claude", role, "bench", (), 0, 0, {"stdout": b"ok"})  # type: ignore[arg-type]

    class Reviewer:
        name = "codex"

        def __init__(self) -> None:
            self.verdicts = ["REQUEST_CHANGES", "APPROVE"]

        async def run_reviewer(self, **_: object) -> ProviderResult:
            v = self.verdicts.pop(0)
            return ProviderResult(
                "codex",
                "reviewer",
                "bench",
                (),
                0,
                0,
                {"verdict": json.dumps({"verdict": v}).encode()},
                Verdict(v, "bench"),  # type: ignore[arg-type]
            )

    request = AgentRequest(worktree=wt, task="bench", receipt=out / "receipt.json")
    deps = AgentDeps(agent=Agent(), reviewer=Reviewer(), route=SubscriptionRoute())
    from tests.support.passes import counting_passes

    with counting_passes() as passes:
        t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
        outcome = trio.run(run_agent, request, deps)
        total = time.perf_counter() - t0
    assert outcome.exit_code == 0 and len(outcome.receipt.phases) == 4, outcome.receipt.error
    return {
        "cycle_s": total - provider_s,
        "cycle_cpu_s": time.process_time() - c0 + _children_cpu() - k0,
        "passes": float(sum(passes.values())),
    }


def one_bind(tree: Path) -> dict[str, float]:
    from factory.agent.binding import bind_tree

    t0, c0 = time.perf_counter(), time.process_time()
    first = bind_tree(tree)
    t1, c1 = time.perf_counter(), time.process_time()
    again = bind_tree(tree, first)
    t2 = time.perf_counter()
    assert again.digest == first.digest and len(first.entries) >= BIND_FILES
    return {
        "bind_s": t1 - t0,
        "bind_cpu_s": c1 - c0,
        "rebind_s": t2 - t1,
        "entries": float(len(first.entries)),
    }


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _rss() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"rss_mib": own, "child_rss_mib": kids}


def _child(kind: str, *paths: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--one", kind, *paths],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(proc.stdout))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--only",
        choices=("cycle", "bind", "git-bind", "scale"),
        help="run one measurement only",
    )
    ap.add_argument("--files", default="1000,10000,50000", help="scale: file counts (N,N,..)")
    ap.add_argument("--file-bytes", type=int, default=2048, help="scale: bytes per file")
    ap.add_argument("--baseline", help="scale: an older tree of this repository, run alternately")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        kind, *paths = args.one
        if kind == "cycle":
            result = one_cycle(Path(paths[0]), Path(paths[1]))
        elif kind == "git-bind":
            result = gitbind.one(Path(paths[0]), int(paths[1]))
        else:
            result = one_bind(Path(paths[0]))
        print(json.dumps({**result, **_rss()}))
        return 0
    if args.only == "scale":
        return scale(args)
    if args.only is not None:
        return only(args)

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="factory-bench-"))
    try:
        t = time.perf_counter()
        wt = prepare_cycle(base)
        tree = prepare_bind(base)
        print(f"bench: fixtures ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        cycles, binds = [], []
        for i in range(args.reps):
            out = base / f"out{i}"
            out.mkdir()
            cycles.append(_child("cycle", str(wt), str(out)))
            _git(wt, "checkout", "-q", "--", ".")
            _git(wt, "clean", "-q", "-f", "-d")  # not -x: node_modules stays
            binds.append(_child("bind", str(tree)))
            print(f"bench: rep {i + 1}: {cycles[-1]} {binds[-1]}", file=sys.stderr)

        def med(rows: list[dict[str, float]], key: str) -> float:
            return round(statistics.median(r[key] for r in rows), 3)

        report = {
            "cycle_files": CYCLE_FILES,
            "cycle_bytes": CYCLE_BYTES,
            "bind_files": BIND_FILES,
            "reps": args.reps,
            "cycle_s_median": med(cycles, "cycle_s"),
            "cycle_cpu_s_median": med(cycles, "cycle_cpu_s"),
            "bind_s_median": med(binds, "bind_s"),
            "bind_cpu_s_median": med(binds, "bind_cpu_s"),
            "rebind_s_median": med(binds, "rebind_s"),
            "cycle_peak_rss_mib": round(max(r["rss_mib"] for r in cycles), 1),
            "cycle_peak_git_child_rss_mib": round(max(r["child_rss_mib"] for r in cycles), 1),
            "bind_peak_rss_mib": round(max(r["rss_mib"] for r in binds), 1),
            "targets": {"cycle_s": 2.0, "bind_s": 3.0, "rss_mib": 300},
            "load_average_at_end": os.getloadavg(),
        }
        print(json.dumps(report, indent=2))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def only(args: argparse.Namespace) -> int:
    """``--only KIND``: one measurement's fixture, reps and medians."""
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="factory-bench-"))
    try:
        if args.only == "git-bind":
            wt = gitbind.prepare(base)
            time.sleep(2.5)  # fixture files older than the stat cache's racy margin
            rows = [_child("git-bind", str(wt), str(i)) for i in range(args.reps)]
            for i, row in enumerate(rows):
                print(f"bench: rep {i + 1}: {row}", file=sys.stderr)
            report: dict[str, object] = {"reps": args.reps, **gitbind.summary(rows)}
        elif args.only == "bind":
            tree = prepare_bind(base)
            binds = [_child("bind", str(tree)) for _ in range(args.reps)]
            report = {
                "reps": args.reps,
                "bind_s_median": round(statistics.median(b["bind_s"] for b in binds), 3),
                "rebind_s_median": round(statistics.median(b["rebind_s"] for b in binds), 3),
            }
        else:
            wt = prepare_cycle(base)
            cycles = []
            for i in range(args.reps):
                out = base / f"out{i}"
                out.mkdir()
                cycles.append(_child("cycle", str(wt), str(out)))
                _git(wt, "checkout", "-q", "--", ".")
                _git(wt, "clean", "-q", "-f", "-d")
            report = {
                "reps": args.reps,
                "cycle_s_median": round(statistics.median(c["cycle_s"] for c in cycles), 3),
                "cycle_cpu_s_median": round(statistics.median(c["cycle_cpu_s"] for c in cycles), 3),
            }
        report["load_average_at_end"] = os.getloadavg()
        print(json.dumps(report, indent=2))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def _one_cycle(script: Path, wt: Path, out: Path) -> dict[str, float]:
    """One cycle in a fresh process of ``script`` (this file, or a baseline tree's)."""
    out.mkdir()
    argv = [sys.executable, str(script), "--one", "cycle", str(wt), str(out)]
    proc = subprocess.run(argv, check=True, capture_output=True, text=True)
    _git(wt, "checkout", "-q", "--", ".")
    _git(wt, "clean", "-q", "-f", "-d")
    shutil.rmtree(out)
    return dict(json.loads(proc.stdout))


def _summary(sizes: list[int], rows: dict[int, list[dict[str, float]]]) -> dict[str, Any]:
    """Medians per size (wall, CPU incl. git, passes) and the line through the medians."""
    by: dict[str, dict[str, float]] = {}
    for n in sizes:
        by[str(n)] = {
            "cycle_s_median": round(statistics.median(r["cycle_s"] for r in rows[n]), 3),
            "cycle_cpu_s_median": round(statistics.median(r["cycle_cpu_s"] for r in rows[n]), 3),
        }
        if all("passes" in r for r in rows[n]):
            by[str(n)]["passes"] = max(r["passes"] for r in rows[n])
    out: dict[str, Any] = {"by_files": by}
    for key, name in (("cycle_s_median", "wall"), ("cycle_cpu_s_median", "cpu")):
        fit = statistics.linear_regression(sizes, [by[str(n)][key] for n in sizes])
        out[f"{name}_fixed_s"] = round(fit.intercept, 3)
        out[f"{name}_per_file_us"] = round(fit.slope * 1e6, 1)
    return out


def scale(args: argparse.Namespace) -> int:
    """``--only scale``: the cycle over several repository sizes; per-file cost by a line
    fit. With ``--baseline DIR`` (an older tree of this repository, e.g. ``git archive``
    of a commit) its cycle runs alternately with this tree's on the same fixtures."""
    sizes = [int(n) for n in args.files.split(",")]
    top = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="factory-bench-"))
    trees = {"this": Path(__file__).resolve()}
    if args.baseline:
        trees["baseline"] = Path(args.baseline).resolve() / "scripts" / "bench_agent.py"
    rows: dict[str, dict[int, list[dict[str, float]]]] = {k: {} for k in trees}
    try:
        for n in sizes:
            base = top / f"n{n}"
            wt = prepare_cycle(base, n, n * args.file_bytes)
            time.sleep(2.5)  # fixture files older than the stat cache's racy margin
            for i in range(args.reps):
                for name, script in trees.items():
                    rows[name].setdefault(n, []).append(_one_cycle(script, wt, base / f"o{i}"))
            for name in trees:
                walls = [round(r["cycle_s"], 3) for r in rows[name][n]]
                print(f"bench: {name} {n} files: {walls}", file=sys.stderr)
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        report: dict[str, Any] = {
            "reps": args.reps,
            "file_bytes": args.file_bytes,
            **{name: _summary(sizes, rows[name]) for name in trees},
            "targets": {"per_file_us": 20, "passes": 4},
            "load_average_at_end": os.getloadavg(),
        }
        print(json.dumps(report, indent=2))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

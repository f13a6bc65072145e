"""Benchmark worktree creation (issue 16): ``factory agent --repo``'s creation of a linked
worktree against ``git worktree add`` on the same repository.

Target: on a 10,000-file repository, the median of factory's creation (plan: repository,
base, folder, branch, tree listing and checks; create: ``git worktree add --no-checkout``,
every blob written raw, the index written) is at most 1.5x the median of ``git worktree
add -b NAME PATH COMMIT`` (with its checkout).

Each measurement runs in a fresh child process (factory's wall time is taken around the
two calls, so Python's start-up is not counted; git's is the whole command, its start-up
included — a few milliseconds). The two kinds alternate, in turn first, so both see the
same machine load and a warm page cache; before each measurement the file system is
synced and every created worktree is removed, so no run pays for the last one's
write-back. CPU seconds (user + system, the child and every git process it waited for —
factory's includes Python's start-up) are reported beside wall times: on a loaded
machine they are the steadier comparison. The report is one JSON object on stdout.

Usage: ``scripts/bench_worktree [--reps N] [--files N] [--file-bytes N] [--dir DIR]``.
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

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.5

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from factory.gitio.create import WorktreeSpec, create_worktree, plan_worktree
t0 = time.perf_counter()
plan = plan_worktree(WorktreeSpec(Path(sys.argv[2]), base=sys.argv[3], path=Path(sys.argv[4])))
create_worktree(plan)
print(time.perf_counter() - t0)
"""


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return proc.stdout


def prepare(base: Path, files: int, size: int) -> tuple[Path, str]:
    """A repository with ``files`` files of ``size`` bytes, 500 per folder, one commit."""
    repo = base / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "bench")
    _git(repo, "config", "user.email", "bench@factory.invalid")
    block = (b"line of source text\n" * (size // 20 + 1))[:size]
    for i in range(files):
        sub = repo / "src" / f"d{i // 500:03d}"
        if i % 500 == 0:
            sub.mkdir(parents=True)
        (sub / f"f{i:06d}.txt").write_bytes(block[:-12] + f"{i:011d}\n".encode())
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_git(repo: Path, commit: str, path: Path, branch: str) -> tuple[float, float]:
    os.sync()
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(
        ["git", "worktree", "add", "-q", "-b", branch, str(path), commit],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0, _children_cpu() - c0


def time_factory(repo: Path, commit: str, path: Path) -> tuple[float, float]:
    os.sync()
    c0 = _children_cpu()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(repo), commit, str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), _children_cpu() - c0


def drop(repo: Path, path: Path) -> None:
    _git(repo, "worktree", "remove", "--force", str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_worktree",
        description="Time factory's worktree creation against git worktree add (JSON out).",
    )
    parser.add_argument("--reps", type=int, default=7, help="measurements of each (default 7)")
    parser.add_argument("--files", type=int, default=10_000, help="files in the repository")
    parser.add_argument("--file-bytes", type=int, default=2048, help="bytes per file")
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-worktree-"))
    try:
        repo, commit = prepare(work / "fixture", args.files, args.file_bytes)
        git_s: list[tuple[float, float]] = []
        ours_s: list[tuple[float, float]] = []
        for rep in range(args.reps):
            for kind in ("git", "factory") if rep % 2 == 0 else ("factory", "git"):
                path = work / f"{kind}-{rep}"
                if kind == "git":
                    git_s.append(time_git(repo, commit, path, f"bench-git-{rep}"))
                else:
                    ours_s.append(time_factory(repo, commit, path))
                drop(repo, path)
        git_median = statistics.median(w for w, _ in git_s)
        ours_median = statistics.median(w for w, _ in ours_s)
        git_cpu = statistics.median(c for _, c in git_s)
        ours_cpu = statistics.median(c for _, c in ours_s)
        ratio = ours_median / git_median
        report = {
            "schema": "factory.bench-worktree/1",
            "files": args.files,
            "file_bytes": args.file_bytes,
            "reps": args.reps,
            "git_worktree_add_median_s": round(git_median, 4),
            "factory_create_median_s": round(ours_median, 4),
            "ratio": round(ratio, 3),
            "git_cpu_median_s": round(git_cpu, 4),
            "factory_cpu_median_s": round(ours_cpu, 4),
            "cpu_ratio": round(ours_cpu / git_cpu, 3) if git_cpu else None,
            "target_ratio": TARGET_RATIO,
            "meets_target": ratio <= TARGET_RATIO,
            "git_s": [round(w, 4) for w, _ in git_s],
            "factory_s": [round(w, 4) for w, _ in ours_s],
        }
        print(json.dumps(report, indent=2))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

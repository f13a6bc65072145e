"""Benchmark ``factory receipt apply`` (issue 22) against ``git apply --index`` + ``git
write-tree`` of the same patch into the same kind of checkout.

Fixture: a repository of ``--base-files`` files and one completed agent run (in-process
fake providers, a test emulation: no model runs) whose worker changed ``--files`` of them
(default 1,000) — the receipt and its evidence as ``factory agent --repo`` writes them.

Each measurement gets a fresh target: a linked worktree at the base commit (``git worktree
add --detach``; with ``--clone`` a fresh ``--no-local`` clone, whose object database lacks
the candidate's blobs), made and removed outside the timing, the file system synced first. The two
kinds alternate, in turn first. ``factory`` is timed in a fresh child process around
:func:`factory.agent.receipt_apply.apply_receipt` (verification from the receipt's own
evidence, the patch applied in a private index and proven to make the candidate tree, then
staged in the target and proven again) — Python's start-up is not counted there;
``factory_cli_median_s`` is the whole ``factory receipt apply`` command, start-up included,
for reference. ``git`` is the two commands, their start-up included. CPU seconds (user +
system of the child and every git it waited for) are reported beside wall times.

Target: the median ratio factory / git ≤ 1.5. The report is one JSON object on stdout.

Usage: ``scripts/bench_apply [--reps N] [--files N] [--base-files N] [--file-bytes N]
[--clone] [--dir DIR]``.
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

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.5
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_worktree as worktree_bench  # noqa: E402 - the same fixture repository

_git, _children_cpu = worktree_bench._git, worktree_bench._children_cpu

CHILD = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from factory.agent.receipt_apply import ApplyRequest, apply_receipt
t0 = time.perf_counter()
apply_receipt(ApplyRequest(receipt=Path(sys.argv[2]), to=Path(sys.argv[3])), os.environ)
print(time.perf_counter() - t0)
"""

FIXTURE = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import trio
from factory.agent.creating import prepare
from factory.agent.admission import AgentRequest
from factory.agent.run import AgentDeps, run_agent
from factory.gitio.create import WorktreeSpec
from factory.provider_api import SubscriptionRoute
from tests.agent.fakes import FakeAgent, FakeReviewer, Step

repo, receipt, count = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])

def edit(wt):
    for path in sorted((wt / "src").rglob("*.txt"))[:count]:
        path.write_bytes(path.read_bytes() + b"changed by the worker\\n")

draft = AgentRequest(worktree=repo, task="bench", receipt=receipt)
prelude = prepare(WorktreeSpec(repo, path=receipt.parent / "run-wt"), draft)
deps = AgentDeps(agent=FakeAgent([Step(effect=edit)]), reviewer=FakeReviewer([Step()]),
                 route=SubscriptionRoute())
outcome = trio.run(lambda: run_agent(prelude.planned.request, deps, prelude=prelude))
assert outcome.exit_code == 0, outcome.receipt.error
"""


def prepare(base: Path, files: int, changed: int, size: int) -> tuple[Path, Path, str, Path]:
    """The repository, the receipt, the base commit and the bound patch's path."""
    from tests.support.bench import isolate

    isolate(base)
    repo, commit = worktree_bench.prepare(base, files, size)
    receipt = base / "receipt.json"
    subprocess.run(
        [sys.executable, "-c", FIXTURE, str(ROOT), str(repo), str(receipt), str(changed)],
        check=True,
        cwd=ROOT,
    )
    doc = json.loads(receipt.read_bytes())
    patch = doc["candidate"]["initial"]["patch_evidence"]["path"]
    return repo, receipt, commit, receipt.parent / patch


def target(repo: Path, path: Path, commit: str, clone: bool) -> Path:
    if clone:  # a fresh clone: only reachable objects, the candidate's blobs are not there
        _git(repo.parent, "clone", "-q", "--no-local", str(repo), str(path))
    else:
        _git(repo, "worktree", "add", "-q", "--detach", str(path), commit)
    os.sync()
    return path


def drop(repo: Path, path: Path, clone: bool) -> None:
    if clone:
        shutil.rmtree(path)
    else:
        _git(repo, "worktree", "remove", "--force", str(path))


def time_git(target: Path, patch: Path) -> tuple[float, float]:
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(["git", "apply", "--index", "--binary", str(patch)], cwd=target, check=True)
    subprocess.run(["git", "write-tree"], cwd=target, check=True, capture_output=True)
    return time.perf_counter() - t0, _children_cpu() - c0


def time_factory(target: Path, receipt: Path) -> tuple[float, float]:
    c0 = _children_cpu()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(receipt), str(target)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[-1]), _children_cpu() - c0


def time_cli(target: Path, receipt: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "factory", "receipt", "apply", str(receipt), "--to", str(target)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return time.perf_counter() - t0


def _measure(args: argparse.Namespace, work: Path) -> dict[str, object]:
    repo, receipt, commit, patch = prepare(work, args.base_files, args.files, args.file_bytes)
    git_s: list[tuple[float, float]] = []
    ours_s: list[tuple[float, float]] = []
    cli_s: list[float] = []
    for rep in range(args.reps):
        for kind in ("git", "factory", "cli") if rep % 2 == 0 else ("cli", "factory", "git"):
            path = target(repo, work / f"{kind}-{rep}", commit, args.clone)
            if kind == "git":
                git_s.append(time_git(path, patch))
            elif kind == "factory":
                ours_s.append(time_factory(path, receipt))
            else:
                cli_s.append(time_cli(path, receipt))
            drop(repo, path, args.clone)
    git_median = statistics.median(w for w, _ in git_s)
    ours_median = statistics.median(w for w, _ in ours_s)
    git_cpu = statistics.median(c for _, c in git_s)
    ours_cpu = statistics.median(c for _, c in ours_s)
    ratio = ours_median / git_median
    return {
        "schema": "factory.bench-apply/1",
        "changed_files": args.files,
        "base_files": args.base_files,
        "file_bytes": args.file_bytes,
        "patch_bytes": patch.stat().st_size,
        "reps": args.reps,
        "target": "fresh clone" if args.clone else "linked worktree of the run's repository",
        "git_apply_write_tree_median_s": round(git_median, 4),
        "factory_apply_median_s": round(ours_median, 4),
        "factory_cli_median_s": round(statistics.median(cli_s), 4),
        "ratio": round(ratio, 3),
        "git_cpu_median_s": round(git_cpu, 4),
        "factory_cpu_median_s": round(ours_cpu, 4),
        "cpu_ratio": round(ours_cpu / git_cpu, 3) if git_cpu else None,
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
        "git_s": [round(w, 4) for w, _ in git_s],
        "factory_s": [round(w, 4) for w, _ in ours_s],
        "cli_s": [round(w, 4) for w in cli_s],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_apply",
        description="Time factory receipt apply against git apply + git write-tree (JSON out).",
    )
    parser.add_argument("--reps", type=int, default=7, help="measurements of each (default 7)")
    parser.add_argument("--files", type=int, default=1000, help="files the candidate changes")
    parser.add_argument("--base-files", type=int, default=2000, help="files in the repository")
    parser.add_argument("--file-bytes", type=int, default=2048, help="bytes per file")
    parser.add_argument(
        "--clone", action="store_true", help="targets are fresh clones (default: linked worktrees)"
    )
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    if args.files > args.base_files:
        parser.error("--files cannot exceed --base-files")
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-apply-"))
    try:
        print(json.dumps(_measure(args, work), indent=2))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

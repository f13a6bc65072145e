"""The review gate benchmark (issue 13), run by ``scripts/bench_review`` (``--only gates``).

A repository of FILES committed files with CHANGED modified ones, settled (files older than
the index, stat data refreshed), is approved (start, one clean lens result, evidence), then:

1. ``git write-tree`` on the same repository, the yardstick (median of RUNS);
2. ``validate --gate pre-commit`` — in-process (``factory.review.gates.validate``, the
   full path) and as the CLI (a new process each run) — every run an allow, so every run
   also does the final re-check under the lock (target: <= 150 ms, reported as a ratio to
   write-tree). The CLI takes the hook path (``factory.review.gates.validate.check``: the gate memo
   and the kept target); two more CLI series show the rest: ``--no-memo`` (every record
   validated with the models) and a new index before each run (``git add -A`` and ``git
   reset`` in turn: the memo holds, the target is derived twice);
3. the candidate is committed; ``validate --gate pre-push`` the same two ways, and once
   more with ``--remote`` against a local bare remote that holds the base (target: <= 200
   ms).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any


def _approve(repo: Path, tmp: Path) -> str:
    from factory.review.finalize import FinalizeArgs, finalize
    from factory.review.service import open_context, start

    started = start(repo, base_ref=None, focus=None, policy_path=None)
    results = []
    for lens in started["lenses"]:
        path = tmp / f"gate-{lens['lens']}.json"
        path.write_text(json.dumps({"findings": [], "evidence": ["read the whole diff"]}))
        results.append(path)
    evidence = tmp / "gate-evidence.txt"
    evidence.write_bytes(b"suite: 1000 passed\n")
    args = FinalizeArgs(lineage=started["lineage"], results=tuple(results), evidence=str(evidence))
    view, _ = finalize(open_context(repo), args)
    assert view["state"] == "approved", view
    return str(view["lineage"])


def _timed(bench: Any, runs: int, fn: Any) -> list[Any]:
    clocks = []
    for _ in range(runs):
        with bench.Clock() as clock:
            fn()
        clocks.append(clock)
    return clocks


def _gate(
    bench: Any, repo: Path, runs: int, gate: str, *extra: str, before: Any = None
) -> dict[str, Any]:
    from factory.review.gates.live import GateRequest
    from factory.review.gates.validate import validate

    remote = extra[1] if "--remote" in extra else None

    def inproc() -> None:
        result = validate(repo, GateRequest(gate=gate, remote=remote))  # type: ignore[arg-type]
        assert result.allowed, result.reason

    inside = _timed(bench, runs, inproc)
    walls, rss = [], []
    for i in range(runs):
        if before is not None:
            before(i)
        # as the hook runs it: one line on stderr, no JSON document
        clock, peak, doc = bench.cli(["review", "validate", "--gate", gate, *extra], repo)
        assert doc == {"exit_code": 0}, doc
        walls.append(clock)
        rss.append(peak)
    return {
        "in_process_ms": bench._stats(inside, scale=1000.0),
        "cli_ms": bench._stats(walls, scale=1000.0),
        "cli_peak_rss_mib": max(rss) / 1024,
    }


def bench_gates(bench: Any, tmp: Path, files: int, changed: int, runs: int) -> dict[str, Any]:
    """Run the gate benchmark in ``tmp`` with the helpers of ``scripts/bench_review.py``."""
    root = tmp / "gates"
    root.mkdir()
    repo = bench.make_repo(root, files)
    bare = root / "remote.git"
    bench._git(root, "init", "-q", "--bare", str(bare))
    bench._git(repo, "remote", "add", "origin", str(bare))
    bench._git(repo, "push", "-q", "origin", "main")
    bench.change(repo, changed)
    # A settled checkout, as a developer's is: the files older than the index, and the
    # index's stat data refreshed (what their own 'git status' leaves behind).
    time.sleep(1.1)
    bench._git(repo, "update-index", "-q", "--refresh")
    lineage = _approve(repo, tmp)

    def write_tree() -> None:
        subprocess.run(
            ["git", "write-tree"], cwd=repo, env=bench.ENV, capture_output=True, check=True
        )

    yard = bench._stats(_timed(bench, runs, write_tree), scale=1000.0)
    pre_commit = _gate(bench, repo, runs, "pre-commit")
    # The full path as a process: every record validated with the models (--no-memo).
    full = _gate(bench, repo, runs, "pre-commit", "--no-memo")

    def restage(i: int) -> None:  # a new index each run: the kept target never holds
        bench._git(repo, *(("add", "-A") if i % 2 == 0 else ("reset", "-q")))

    after_change = _gate(bench, repo, runs, "pre-commit", before=restage)
    bench._git(repo, "reset", "-q")
    bench._git(repo, "add", "-A")
    bench._git(repo, "commit", "-q", "-m", "the approved candidate")
    pre_push = _gate(bench, repo, runs, "pre-push")
    with_remote = _gate(bench, repo, runs, "pre-push", "--remote", "origin")
    base = yard["wall_median"]

    def ratio(part: dict[str, Any]) -> dict[str, float]:
        return {k: part[k]["wall_median"] / base for k in ("in_process_ms", "cli_ms") if base > 0}

    return {
        "files": files,
        "changed": changed,
        "lineage": lineage,
        "git_write_tree_ms": yard,
        "pre_commit": {**pre_commit, "ratio_to_write_tree": ratio(pre_commit)},
        "pre_commit_no_memo": full,
        "pre_commit_after_index_change": after_change,
        "pre_push": {**pre_push, "ratio_to_write_tree": ratio(pre_push)},
        "pre_push_with_remote": with_remote,
        "targets_ms": {"pre_commit": 150, "pre_push": 200},
        "medians_ms": {
            "pre_commit_in_process": pre_commit["in_process_ms"]["wall_median"],
            "pre_push_in_process": pre_push["in_process_ms"]["wall_median"],
            "pre_commit_cli": pre_commit["cli_ms"]["wall_median"],
            "pre_commit_cli_after_index_change": after_change["cli_ms"]["wall_median"],
            "pre_commit_cli_no_memo": full["cli_ms"]["wall_median"],
            "pre_push_cli": pre_push["cli_ms"]["wall_median"],
        },
    }

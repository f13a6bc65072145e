"""The git-directory binding's cost (issue 8 §1), measured for ``scripts/bench_agent``.

Fixture: a repository with 50,000 loose objects, 5,000 loose refs (each with its reflog, as
``git update-ref`` leaves them) and 1,000 tracked files, plus a linked worktree. Loose
objects and loose refs are the worst case: a binding that listed ``objects/`` would pay for
every object, and every ref is a file of its own.

Each measurement process binds, in alternating order, with the allow-list of control files
used before issue 8 (``legacy``, re-created here with the same walker) and with the binding
by exclusion (``factory.agent.control.bind_control``): once cold (no previous binding, every
file hashed) and once warm (the cold binding as the stat cache, as between a run's phases).
The target is at most 50 ms added per binding over the allow-list.
"""

from __future__ import annotations

import os
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

OBJECTS = 50_000
REFS = 5_000
TRACKED = 1_000


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True)
    return proc.stdout.decode()


def _loose_objects(common: Path, count: int) -> None:
    import hashlib

    for i in range(count):
        body = b"bench object %d\n" % i
        raw = b"blob %d\0" % len(body) + body
        oid = hashlib.sha1(raw).hexdigest()  # noqa: S324 (git's object id, not security)
        folder = common / "objects" / oid[:2]
        folder.mkdir(exist_ok=True)
        (folder / oid[2:]).write_bytes(zlib.compress(raw))


def new_repo(repo: Path) -> Path:
    """An empty repository on ``main`` with a bench identity."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "bench")
    _git(repo, "config", "user.email", "bench@factory.invalid")
    return repo


def prepare(base: Path) -> Path:
    """The fixture (see the module docstring); returns the linked worktree."""
    repo = new_repo(base / "gitbind-repo")
    for i in range(TRACKED):
        sub = repo / f"d{i // 100:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:04d}.txt").write_text(f"tracked {i}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    head = _git(repo, "rev-parse", "HEAD").strip()
    _loose_objects(repo / ".git", OBJECTS)
    lines = "".join(f"create refs/heads/b{i:05d} {head}\n" for i in range(REFS))
    _git(repo, "update-ref", "--stdin", stdin=lines.encode())
    wt = base / "gitbind-wt"
    _git(repo, "worktree", "add", "-q", "-b", "work", str(wt))
    count = _git(repo, "count-objects", "-v")
    loose = int(next(ln for ln in count.splitlines() if ln.startswith("count:")).split()[1])
    refs = len(_git(repo, "for-each-ref").splitlines())
    assert loose >= OBJECTS and refs >= REFS, (loose, refs)
    return wt


_LEGACY_GIT_DIR = ("HEAD", "index", "gitdir", "commondir", "config.worktree", "refs", "logs/HEAD")
_LEGACY_COMMON = ("HEAD", "config", "config.worktree", "hooks", "info", "refs", "packed-refs")


def legacy_bind(wt: Any, previous: Any = None) -> Any:
    """The allow-list binding used before issue 8, on today's walker (for comparison)."""
    from factory.agent.binding import Bound, digest, trust_before, walk
    from factory.agent.control import _by_name

    started = time.time_ns()
    prev = previous.entries if previous else {}
    trust = trust_before(previous)
    items = [(b"worktree/.git", wt.dot_git)]
    items += [(b"git-dir/" + n.encode(), wt.git_dir / n) for n in _LEGACY_GIT_DIR]
    items += [(b"common-dir/" + n.encode(), wt.common_dir / n) for n in _LEGACY_COMMON]
    entries = {}
    for label, path in items:
        entries[label] = e = _by_name(label, os.fsencode(path), prev, trust)
        if e.kind == "d":
            entries.update(walk(os.fsencode(path), label, prev, trust, workers=1))
    return Bound(entries, digest("legacy", entries), started)


def one(wt_path: Path, rep: int) -> dict[str, float]:
    """One measurement process: cold and warm, legacy and by exclusion (which goes first
    alternates with ``rep``, so neither always finds the page cache warmed by the other)."""
    from factory.agent.control import bind_control
    from factory.gitio.worktree import locate

    wt = locate(wt_path)
    out: dict[str, float] = {}
    kinds = [("legacy", legacy_bind), ("exclusion", bind_control)]
    for name, fn in kinds if rep % 2 == 0 else kinds[::-1]:
        t0, c0 = time.perf_counter(), time.process_time()
        cold = fn(wt)
        t1, c1 = time.perf_counter(), time.process_time()
        warm = fn(wt, cold)
        t2, c2 = time.perf_counter(), time.process_time()
        assert warm.digest == cold.digest
        out[f"{name}_cold_s"], out[f"{name}_cold_cpu_s"] = t1 - t0, c1 - c0
        out[f"{name}_warm_s"], out[f"{name}_warm_cpu_s"] = t2 - t1, c2 - c1
        out[f"{name}_entries"] = float(len(cold.entries))
    return out


def summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    import statistics

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    report: dict[str, Any] = {"objects": OBJECTS, "refs": REFS, "tracked": TRACKED}
    for kind in ("cold", "warm", "cold_cpu", "warm_cpu"):
        legacy, new = med(f"legacy_{kind}_s"), med(f"exclusion_{kind}_s")
        report[f"legacy_{kind}_ms_median"] = round(legacy * 1000, 1)
        report[f"exclusion_{kind}_ms_median"] = round(new * 1000, 1)
        report[f"added_{kind}_ms_median"] = round((new - legacy) * 1000, 1)
    report["entries"] = {"legacy": med("legacy_entries"), "exclusion": med("exclusion_entries")}
    report["target_added_ms"] = 50
    return report

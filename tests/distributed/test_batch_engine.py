"""``factory batch run --engine temporal``: the same command, the same journal and report
as the local engine, with the tasks run by real ``factory worker`` processes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory
from tests.support.git import git
from tests.support.temporal import DevServer, start_worker


def _argv(tasks: Path, repo: Path, out: Path, *extra: str) -> list[str]:
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out)]
    return [*argv, "--rehearsal", str(DEMO), "--progress", "jsonl", "--min-free-mb", "0", *extra]


def test_both_engines_write_the_same_report(tmp_path: Path, temporal_server: DevServer) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 3)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    workers = [start_worker(temporal_server, tmp_path / f"w{i}", f"w{i}") for i in (1, 2)]
    addr = temporal_server.address
    try:
        remote = run_factory(
            _argv(tasks, repo, tmp_path / "remote-out", "--engine", "temporal", "--temporal", addr),
            timeout=600,
        )
    finally:
        for w in workers:
            w.stop()
    assert remote.returncode == 0, remote.stderr[-3000:]
    local = run_factory(_argv(tasks, repo, tmp_path / "local-out"), timeout=600)
    assert local.returncode == 0, local.stderr[-3000:]
    a, b = json.loads(remote.stdout), json.loads(local.stdout)
    assert (a["engine"], b["engine"]) == ("temporal", "local")
    assert a.keys() == b.keys() and a["counts"] == b["counts"] == {"completed": 3}
    assert [t.keys() for t in a["tasks"]] == [t.keys() for t in b["tasks"]]
    assert [(t["id"], t["outcome"], t["state"]) for t in a["tasks"]] == [
        (t["id"], t["outcome"], t["state"]) for t in b["tasks"]
    ]
    for out in ("remote-out", "local-out"):
        verified = run_factory(["batch", "verify", str(tmp_path / out)])
        assert verified.returncode == 0, verified.stderr
        db = sqlite3.connect(tmp_path / out / "batch.sqlite3")
        assert {r[0] for r in db.execute("SELECT state FROM tasks")} == {"done"}
        db.close()
    refs = git(bare, "for-each-ref", "--format=%(refname)", "refs/factory/runs").split()
    assert len(refs) == 3  # one bundle per task, in the remote's own namespace


def test_temporal_engine_needs_a_server_and_a_remote(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    no_server = run_factory(_argv(tasks, repo, tmp_path / "o1", "--engine", "temporal"))
    assert no_server.returncode == 2 and b"batch-temporal-required" in no_server.stderr
    no_remote = run_factory(
        _argv(tasks, repo, tmp_path / "o2", "--engine", "temporal", "--temporal", "127.0.0.1:1")
    )
    assert no_remote.returncode == 2 and b"batch-remote-unknown" in no_remote.stderr


def test_an_unreachable_server_is_a_typed_failure(tmp_path: Path) -> None:
    """Observed before: 'internal error (ExceptionGroup)', exit 1, for both commands."""
    repo, tasks = repo_and_tasks(tmp_path, 1)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    argv = _argv(tasks, repo, tmp_path / "o", "--engine", "temporal", "--temporal", "127.0.0.1:9")
    batch = run_factory(argv, timeout=120)
    assert batch.returncode == 4 and b"factory: temporal-unreachable:" in batch.stderr
    work = ["worker", "--temporal", "127.0.0.1:9", "--workdir", str(tmp_path / "w")]
    worker = run_factory(work, timeout=120)
    assert worker.returncode == 4 and b"factory: temporal-unreachable:" in worker.stderr
    (tmp_path / "afile").write_text("x")
    notdir = run_factory(
        ["worker", "--temporal", "127.0.0.1:9", "--workdir", str(tmp_path / "afile")]
    )
    assert notdir.returncode == 2 and b"factory: worker-workdir-invalid:" in notdir.stderr


def test_an_unserved_queue_is_named_the_deadline_is_exit_4_and_attach_counts_once(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    """Observed before (issue 26, as a new user): a queue no worker polls waited in silence;
    the batch deadline exited 130 as if Ctrl-C had been pressed; a resubmission that
    attached to the running workflow counted a second attempt."""
    repo, tasks = repo_and_tasks(tmp_path, 2)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    addr = temporal_server.address
    argv = _argv(tasks, repo, tmp_path / "out", "--engine", "temporal", "--temporal", addr)
    waited = run_factory([*argv, "--deadline-s", "25"], timeout=300)
    assert waited.returncode == 4, waited.stderr[-3000:]  # not done as asked, not 130
    notes = [json.loads(line) for line in waited.stderr.splitlines() if line.startswith(b"{")]
    texts = [n["text"] for n in notes if n["event"] == "note"]
    assert any("no worker polls task queue 'factory'" in t for t in texts), texts
    assert json.loads(waited.stdout)["counts"] == {"interrupted": 2}
    # Twin: a worker serves the queue; the same command attaches to the same workflow.
    worker = start_worker(temporal_server, tmp_path / "w1", "w1")
    try:
        done = run_factory(argv, timeout=600)
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    assert b"no worker polls" not in done.stderr
    report = json.loads(done.stdout)
    assert [t["attempts"] for t in report["tasks"]] == [1, 1]  # one worker attempt each

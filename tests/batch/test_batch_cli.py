"""``factory batch`` as users run it: real git, real child processes, the rehearsal route
(the real pinned CLIs against factory's scripted model)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory


def _batch_argv(tasks: Path, repo: Path, out: Path, *extra: str) -> list[str]:
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out)]
    return [*argv, "--rehearsal", str(DEMO), "--progress", "jsonl", "--min-free-mb", "0", *extra]


def _rows(out: Path) -> dict[str, tuple[str, int]]:
    db = sqlite3.connect(out / "batch.sqlite3")
    try:
        return {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, state, attempts FROM tasks")}
    finally:
        db.close()


def test_twelve_tasks_three_at_a_time_then_verify(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 12)
    out = tmp_path / "out"
    proc = run_factory(_batch_argv(tasks, repo, out, "--jobs", "3"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["schema"] == "factory.batch-report/1" and report["counts"] == {"completed": 12}
    assert (out / "batch-report.json").read_bytes() == proc.stdout
    db = sqlite3.connect(out / "batch.sqlite3")
    (most,) = db.execute("SELECT MAX(running) FROM events").fetchone()
    db.close()
    assert most <= 3  # from the supervisor's own record
    assert b"REHEARSAL" in proc.stderr
    verified = run_factory(["batch", "verify", str(out)])
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True
    intact = run_factory(["batch", "show", str(out)]).stdout.decode()
    assert "receipt show " in intact and "receipt verify " not in intact  # twin of below
    again = run_factory(_batch_argv(tasks, repo, out, "--jobs", "3"))  # resume: nothing left
    assert again.returncode == 0 and all(a == 1 for _, a in _rows(out).values())
    # A tampered receipt: verify names the task, exit 4.
    receipt = out / report["tasks"][0]["receipt"]
    receipt.write_bytes(receipt.read_bytes().replace(b'"completed"', b'"complete_"', 1))
    tampered = run_factory(["batch", "verify", str(out)])
    assert tampered.returncode == 4 and b"task t00" in tampered.stderr
    shown = run_factory(["batch", "show", str(out)])
    assert shown.returncode == 4 and b"DOES NOT VERIFY" in shown.stdout
    # Its next step checks the failing receipt, which names what differs (the path as the
    # user's folder shows it: relative or absolute).
    step = [ln for ln in shown.stdout.decode().splitlines() if " receipt verify " in ln]
    assert len(step) == 1 and step[0].endswith("tasks/t00/attempt-1/receipt.json"), step


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "factory", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _wait_rows(out: Path, want: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "batch.sqlite3").exists():
            try:
                if any(s == want for s, _ in _rows(out).values()):
                    return
            except sqlite3.Error:
                pass
        time.sleep(0.05)
    raise AssertionError(f"no task reached {want}")


@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_a_stopped_batch_resumes_and_reruns_nothing_that_finished(tmp_path: Path, how: str) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 3)
    out = tmp_path / "out"
    argv = _batch_argv(tasks, repo, out, "--jobs", "1")
    first = _start(argv)
    _wait_rows(out, "done")
    _wait_rows(out, "running")
    tree = psutil.Process(first.pid).children(recursive=True)
    first.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
    first.communicate(timeout=120)
    rows = _rows(out)
    if how == "ctrl-c":
        assert first.returncode == 130
        assert "interrupted" in {s for s, _ in rows.values()}
    else:
        assert "running" in {s for s, _ in rows.values()}
    deadline = time.monotonic() + 30
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree):
        assert time.monotonic() < deadline, "the stopped batch left processes behind"
        time.sleep(0.1)
    done_before = {t for t, (s, _) in rows.items() if s == "done"}
    second = run_factory(argv, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    after = _rows(out)
    assert all(after[t] == rows[t] for t in done_before)  # nothing finished ran again
    cut = [t for t, (s, _) in rows.items() if s in ("running", "interrupted")]
    assert cut and all(after[t] == ("done", rows[t][1] + 1) for t in cut)  # a new attempt
    assert json.loads(second.stdout)["counts"] == {"completed": 3}


HEAD = 'schema = "factory.batch-tasks/1"\n[[tasks]]\n'


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "a.toml",
            HEAD + 'id = "a"\ntask = "x"\n[[tasks]]\nid = "a"\ntask = "y"\n',
        ),
        (
            "a.toml",
            'schema = "factory.batch-tasks/1"\n[[tasks]]\nid = "a"\ntask = "x"\nextra = 1\n',
        ),
        ("a.toml", 'schema = "factory.batch-tasks/2"\n[[tasks]]\nid = "a"\ntask = "x"\n'),
        ("a.toml", 'schema = "factory.batch-tasks/1"\n[[tasks]]\nid = "../a"\ntask = "x"\n'),
        ("a.toml", 'schema = "factory.batch-tasks/1"\n[[tasks]]\nid = "a"\ntask = "  "\n'),
        ("a.toml", "not toml ["),
        ("a.jsonl", '{"id": "a", "task": "x", "id": "b"}\n'),
        ("a.jsonl", '{"id": "a"}\n'),
        ("a.jsonl", "\n\n"),
        ("a.txt", '{"id": "a", "task": "x"}\n'),
    ],
)
def test_a_bad_tasks_file_is_refused_before_anything(tmp_path: Path, name: str, text: str) -> None:
    repo, _ = repo_and_tasks(tmp_path, 1)
    tasks = tmp_path / name
    tasks.write_text(text)
    out = tmp_path / "out"
    proc = run_factory(_batch_argv(tasks, repo, out))
    assert proc.returncode == 2, proc.stderr
    assert b"factory: batch-tasks-" in proc.stderr and not out.exists()


@pytest.mark.parametrize("form", ["toml", "jsonl"])
def test_both_forms_are_read(tmp_path: Path, form: str) -> None:
    from factory.batch.tasks import load_tasks

    _, tasks = repo_and_tasks(tmp_path, 3, form=form)
    loaded, digest = load_tasks(tasks)
    assert [t.id for t in loaded] == ["t00", "t01", "t02"] and len(digest) == 64


def test_out_holding_another_batch_is_refused(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    out = tmp_path / "out"
    assert run_factory(_batch_argv(tasks, repo, out)).returncode == 0
    tasks.write_text(tasks.read_text().replace("(0)", "(changed)"))
    proc = run_factory(_batch_argv(tasks, repo, out))
    assert proc.returncode == 2 and b"factory: batch-mismatch:" in proc.stderr
    assert os.path.exists(out / "batch-report.json")


def test_a_bad_scenario_is_refused_before_anything_and_a_rerun_can_start(tmp_path: Path) -> None:
    """Observed before: the folder was made and every task recorded 'refused' for good."""
    repo, tasks = repo_and_tasks(tmp_path, 1)
    out = tmp_path / "out"
    argv = _batch_argv(tasks, repo, out)
    bad = [*argv[: argv.index("--rehearsal") + 1], str(tmp_path / "nope.json"),
           *argv[argv.index("--rehearsal") + 2 :]]  # fmt: skip
    proc = run_factory(bad)
    assert proc.returncode == 2 and b"factory: rehearsal-scenario-" in proc.stderr
    assert not out.exists()
    assert run_factory(argv, timeout=600).returncode == 0  # the twin: the right scenario runs


def test_show_html_to_a_missing_folder_is_refused(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    out = tmp_path / "out"
    assert run_factory(_batch_argv(tasks, repo, out), timeout=600).returncode == 0
    proc = run_factory(["batch", "show", str(out), "--html", str(tmp_path / "no" / "x.html")])
    assert proc.returncode == 2 and b"factory: html-folder-missing:" in proc.stderr
    ok = run_factory(["batch", "show", str(out), "--html", str(tmp_path / "x.html")])
    assert ok.returncode == 0 and (tmp_path / "x.html").read_bytes().startswith(b"<!DOCTYPE")

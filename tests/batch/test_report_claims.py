"""A batch report, ``batch show`` and the progress claim only what was observed (issue 26,
tried as a new user): a refused or never-started task names no receipt and is not said to
verify; a resumed batch shows the tasks that ended earlier as ended, not waiting; with
stdout closed the report is not lost in silence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from factory.batch.journal import Journal
from factory.batch.report import verify_batch, write_report
from factory.batch.show import render_text
from factory.batch.tasks import BatchTask
from tests.batch.helpers import repo_and_tasks
from tests.support.cli import run_factory


def _journal_with_unrun_tasks(folder: Path) -> None:
    journal = Journal(folder)
    tasks = [BatchTask(id=i, task="x") for i in ("refused", "pending")]
    identity = {"repository": "r", "tasks_sha256": "0" * 64, "base_commit": "a" * 40,
                "engine": "local", "route": "rehearsal"}  # fmt: skip
    journal.open_batch(identity, tasks, {"batch_id": "b"})
    planned = folder / "tasks" / "refused" / "attempt-1" / "receipt.json"
    journal.start("refused", str(planned), 1)
    journal.end("refused", state="refused", outcome="refused", revision=None,
                error="factory agent refused the task (exit 2)", running=0)  # fmt: skip
    write_report(journal, folder)
    journal.close()


def test_tasks_without_a_receipt_name_none_and_claim_nothing(tmp_path: Path) -> None:
    _journal_with_unrun_tasks(tmp_path)
    report = json.loads((tmp_path / "batch-report.json").read_bytes())
    assert [(t["id"], t["outcome"], t["receipt"]) for t in report["tasks"]] == [
        ("refused", "refused", None),
        ("pending", "pending", None),
    ]
    check = verify_batch(tmp_path)
    assert check["ok"] and not any(t["receipt_checked"] for t in check["tasks"])
    text, _ = render_text(tmp_path)
    assert "verifies" not in text and text.count("no receipt") == 2
    assert "receipt show" not in text  # no receipt to point at


def test_a_receipt_that_is_there_is_named_and_checked(tmp_path: Path) -> None:
    """Twin: a batch that ran names its receipt and says it verifies."""
    repo, tasks = repo_and_tasks(tmp_path, 1)
    out = tmp_path / "out"
    argv = ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out),
            "--rehearsal", "demo", "--progress", "jsonl", "--min-free-mb", "0"]  # fmt: skip
    first = run_factory(argv, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert json.loads(first.stdout)["tasks"][0]["receipt"] is not None
    text, ok = render_text(out)
    assert ok and "verifies" in text and "no receipt" not in text
    # Resumed: the finished task is reported as ended earlier, never as waiting.
    again = run_factory(argv, timeout=600)
    assert again.returncode == 0
    events = [json.loads(line) for line in again.stderr.splitlines() if line.startswith(b"{")]
    earlier = {"event": "done-earlier", "task": "t00", "outcome": "completed"}
    assert earlier.items() <= events[0].items()
    assert not any(e["event"] == "started" for e in events)
    # stdout closed: the report stays in its file, and stderr says where.
    closed = subprocess.run(
        ["bash", "-c", '"$0" -m factory "$@" >&-', sys.executable, *argv],
        capture_output=True, timeout=600, check=False,
    )  # fmt: skip
    assert closed.returncode == 0, closed.stderr[-2000:]
    assert b"stdout is closed" in closed.stderr and b"batch-report.json" in closed.stderr


def test_version_with_stdout_closed_says_so_and_exits_0() -> None:
    proc = subprocess.run(
        ["bash", "-c", '"$0" -m factory --version >&-', sys.executable],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and b"stdout is closed" in proc.stderr
    twin = run_factory(["--version"])
    assert twin.returncode == 0 and twin.stdout.startswith(b"factory ") and twin.stderr == b""


def test_a_closed_stdout_is_not_reused_by_the_next_file(tmp_path: Path) -> None:
    """With fd 1 closed, the next file opened would be fd 1 and a child inheriting it
    would write into it; factory holds fds 0-2 on /dev/null first."""

    def first_fd(hold: bool) -> int:
        code = (
            "import os, sys\n"
            "from factory.cli.main import _hold_standard_fds\n"
            + ("_hold_standard_fds()\n" if hold else "")
            + f"fd = os.open({str(tmp_path / 'f')!r}, os.O_CREAT | os.O_WRONLY)\n"
            "sys.stderr.write(str(fd))\n"
        )
        proc = subprocess.run(
            ["bash", "-c", '"$0" -c "$1" >&-', sys.executable, code],
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return int(proc.stderr)

    assert first_fd(hold=True) > 2
    assert first_fd(hold=False) == 1  # the twin: what happens without it

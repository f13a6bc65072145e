"""Two concurrent finalize calls from the same revision (issue 12): one wins, the other
gets a CAS conflict that changes nothing, and its plain retry is clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.review.cli_helpers import edit_parser, review, reviewer_doc, snapshot_bytes, write_json

DRIVER = r"""
import os, sys, time
from pathlib import Path
from factory.review import finalize
sync = Path(os.environ["SYNC_DIR"]); name = os.environ["SYNC_NAME"]
def hold():
    (sync / f"planned-{name}").write_text("planned")
    while not (sync / f"go-{name}").exists():
        time.sleep(0.02)
finalize.plan_hook = hold
from factory.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _spawn(args: list[str], cwd: Path, sync: Path, name: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, SYNC_DIR=str(sync), SYNC_NAME=name)
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait(path: Path, deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never appeared"
        time.sleep(0.02)


def test_two_concurrent_finalizes_one_wins_one_conflicts_and_retries_cleanly(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    result = write_json(tmp_path / "r.json", reviewer_doc())
    evidence = tmp_path / "e.txt"
    evidence.write_bytes(b"pytest: 30 passed\n")
    sync = tmp_path / "sync"
    sync.mkdir()
    base = ["review", "finalize", "--cwd", str(repo), "--result", str(result)]
    a = _spawn(base, repo, sync, "a")
    b = _spawn([*base, "--evidence", str(evidence)], repo, sync, "b")
    _wait(sync / "planned-a")
    _wait(sync / "planned-b")  # both planned from the same revision
    (sync / "go-a").write_text("go")
    out_a, err_a = a.communicate(timeout=120)
    assert a.returncode == 0, err_a
    assert json.loads(out_a)["state"] == "validating"
    after_a = snapshot_bytes(repo)
    (sync / "go-b").write_text("go")
    out_b, _ = b.communicate(timeout=120)
    assert b.returncode == 4
    assert json.loads(out_b)["error"]["code"] == "review-cas-conflict"
    assert snapshot_bytes(repo) == after_a  # the loser wrote nothing
    retry = review(*base[1:], "--evidence", str(evidence), cwd=repo)
    assert retry.code == 0, retry.stderr
    assert retry.doc["state"] == "approved" and retry.doc["applied"] == ["finish"]

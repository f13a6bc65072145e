"""``factory runs`` and ``factory runs prune`` (issue 22): the runs of a repository from the
registry plus what git says is left; prune removes only runs whose change is rejected,
applied or committed elsewhere, each under ``worktree remove``'s checks, and never an
approved change that is nowhere else. Real repositories; runs made by the real CLI with
in-process fake providers (a test emulation, ``tests/agent/fake_factory.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factory.runs.overview import Facts, prune_decision
from tests.agent.creating_helpers import FAKE
from tests.support.cli import run_factory
from tests.support.git import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})


def _run(tmp: Path, repo: Path, scenario: str, out: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(FAKE), scenario, "--", "agent", "--repo", str(repo),
         "--task", "t", "--out", str(tmp / out), "--timeout-ms", "5000"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 3, 4), proc.stderr
    receipt = json.loads((tmp / out).read_bytes())
    assert isinstance(receipt, dict)
    return receipt


def _runs(repo: Path, *extra: str) -> tuple[dict[str, Any], str]:
    proc = run_factory(["runs", "--repo", str(repo), *extra])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict)
    return doc, proc.stderr.decode()


def _prune(repo: Path, *extra: str) -> tuple[dict[str, Any], str]:
    proc = run_factory(["runs", "prune", "--repo", str(repo), *extra])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict)
    return doc, proc.stderr.decode()


def _by_receipt(doc: dict[str, Any], receipt: dict[str, Any]) -> dict[str, Any]:
    path = receipt["worktree_creation"]["path"]
    found: list[dict[str, Any]] = [r for r in doc["runs"] if r["worktree"] == path]
    assert len(found) == 1, doc
    return found[0]


def _exists(repo: Path, receipt: dict[str, Any]) -> tuple[bool, bool]:
    made = receipt["worktree_creation"]
    branch = git(repo, "branch", "--list", made["branch"]).strip()
    return Path(made["path"]).is_dir(), bool(branch)


@pytest.mark.parametrize(
    ("facts", "prune"),
    [
        (Facts(True, True, True, "rejected", True, False, None), True),
        (Facts(True, True, True, "completed", True, False, "commit abc"), True),
        (Facts(True, True, True, "completed", True, False, None), False),
        (Facts(True, True, True, "completed", False, False, "commit abc"), False),
        (Facts(True, True, True, "failed", True, False, None), False),
        (Facts(True, True, True, "running", False, True, None), False),
        (Facts(False, True, True, None, None, False, None), False),
        (Facts(True, False, False, "rejected", True, False, None), False),
    ],
    ids=[
        "rejected",
        "approved-kept-elsewhere",
        "approved-nowhere-else",
        "kept-but-unverified",
        "failed",
        "running",
        "unrecorded",
        "nothing-left",
    ],
)
def test_prune_decision_table(facts: Facts, prune: bool) -> None:
    assert prune_decision(facts)[0] is prune


def test_runs_lists_each_run_and_what_is_left(tmp_path: Path, repo: Path) -> None:
    approved = _run(tmp_path, repo, "approve", "a.json")
    rejected = _run(tmp_path, repo, "reject", "b.json")
    failed = _run(tmp_path, repo, "fail", "c.json")
    git(
        repo,
        "worktree",
        "add",
        "-q",
        "-b",
        "factory/run-feedface",
        str(tmp_path / "x.factory-run-feedface"),
    )
    doc, table = _runs(repo / "src")  # any folder of the repository
    assert doc["schema"] == "factory.runs/1"
    a, b, c = (_by_receipt(doc, r) for r in (approved, rejected, failed))
    assert (a["status"], a["verdict"], a["verifies"], a["change"]) == (
        "completed", "APPROVE", True, "uncommitted",
    )  # fmt: skip
    assert a["prune"] is False and "nowhere else" in a["why"]
    assert (b["status"], b["prune"], b["why"]) == ("rejected", True, "rejected")
    assert (c["status"], c["prune"]) == ("failed", False) and c["change"] is None
    loose = [r for r in doc["runs"] if not r["recorded"]]
    assert [r["branch"] for r in loose] == ["factory/run-feedface"]
    assert loose[0]["prune"] is False
    assert f"run {a['run_id']}  completed APPROVE  verifies: yes" in table
    assert "no factory record" in table


def test_prune_never_removes_an_unapplied_approved_candidate(tmp_path: Path, repo: Path) -> None:
    approved = _run(tmp_path, repo, "approve", "a.json")
    rejected = _run(tmp_path, repo, "reject", "b.json")
    failed = _run(tmp_path, repo, "fail", "c.json")
    dry, dry_err = _prune(repo, "--dry-run")
    assert dry["dry_run"] is True and [r["branch"] for r in dry["runs"]] == [
        rejected["worktree_creation"]["branch"]
    ]
    assert _exists(repo, rejected) == (True, True)  # a dry run removes nothing
    planned = dry["runs"][0]  # ... and says so: what it would remove is not "removed"
    assert (planned["worktree_to_remove"], planned["branch_to_remove"]) == (True, True)
    assert (planned["worktree_removed"], planned["branch_removed"]) == (False, False)
    assert "would remove worktree" in dry_err and " and branch " in dry_err

    report, err = _prune(repo)
    assert len(report["runs"]) == 1
    gone = report["runs"][0]
    assert gone["worktree_removed"] and gone["branch_removed"] and gone["why"] == "rejected"
    assert gone["worktree_to_remove"] and gone["branch_to_remove"]  # twin of the dry run's
    assert _exists(repo, rejected) == (False, False)
    assert _exists(repo, approved) == (True, True)
    assert _exists(repo, failed) == (True, True)
    assert "removed worktree" in err and "(rejected)" in err


def test_an_approved_change_committed_elsewhere_is_pruned(tmp_path: Path, repo: Path) -> None:
    approved = _run(tmp_path, repo, "approve", "a.json")
    proc = run_factory(
        ["receipt", "apply", str(tmp_path / "a.json"), "--to", str(repo), "--commit"]
    )
    assert proc.returncode == 0, proc.stderr
    git(repo, "commit", "-q", "--allow-empty", "-m", "later work on main")  # moved on since
    doc, _ = _runs(repo)
    a = _by_receipt(doc, approved)
    assert a["prune"] is True and a["kept_elsewhere"].startswith("commit ")
    report, _ = _prune(repo)
    assert [(r["worktree_removed"], r["branch_removed"]) for r in report["runs"]] == [(True, True)]
    assert _exists(repo, approved) == (False, False)


def test_an_approved_change_staged_in_another_checkout_is_pruned(
    tmp_path: Path, repo: Path
) -> None:
    approved = _run(tmp_path, repo, "approve", "a.json")
    assert (
        run_factory(["receipt", "apply", str(tmp_path / "a.json"), "--to", str(repo)]).returncode
        == 0
    )
    doc, _ = _runs(repo)
    a = _by_receipt(doc, approved)
    assert a["kept_elsewhere"] == f"staged in {repo}"
    report, _ = _prune(repo)
    assert report["runs"][0]["worktree_removed"] is True
    assert git(repo, "diff", "--cached", "--name-only").split() == ["src/app.py"]  # still there


def test_a_commit_in_the_worktree_and_elsewhere_lets_the_branch_go(
    tmp_path: Path, repo: Path
) -> None:
    approved = _run(tmp_path, repo, "approve", "a.json")
    wt = Path(approved["worktree_creation"]["path"])
    git(wt, "commit", "-q", "-am", "take it here")
    assert (
        run_factory(
            ["receipt", "apply", str(tmp_path / "a.json"), "--to", str(repo), "--commit"]
        ).returncode
        == 0
    )
    report, _ = _prune(repo)
    assert [(r["worktree_removed"], r["branch_removed"]) for r in report["runs"]] == [(True, True)]


def test_prune_keeps_what_worktree_remove_refuses_and_unique_commits(
    tmp_path: Path, repo: Path
) -> None:
    dirty = _run(tmp_path, repo, "reject", "e.json")
    (Path(dirty["worktree_creation"]["path"]) / "mine.txt").write_text("my own work\n")
    locked = _run(tmp_path, repo, "reject", "b.json")
    git(repo, "worktree", "lock", locked["worktree_creation"]["path"])
    committed = _run(tmp_path, repo, "reject", "d.json")
    cwt = Path(committed["worktree_creation"]["path"])
    git(cwt, "add", "-A")
    git(cwt, "commit", "-q", "-m", "keep the rejected attempt")
    report, err = _prune(repo)
    by_branch = {r["branch"]: r for r in report["runs"]}
    # The edited worktree no longer verifies as the receipt's: not even tried.
    assert dirty["worktree_creation"]["branch"] not in by_branch
    assert _exists(repo, dirty) == (True, True)
    d = by_branch[locked["worktree_creation"]["branch"]]
    assert not d["worktree_removed"] and not d["branch_removed"]
    assert d["kept"].startswith("worktree-locked:")
    assert _exists(repo, locked) == (True, True)
    c = by_branch[committed["worktree_creation"]["branch"]]
    assert c["worktree_removed"] and not c["branch_removed"]  # the commit lives on the branch
    assert c["kept"] == "branch kept: the branch holds commits found nowhere else"
    assert _exists(repo, committed) == (False, True)
    assert "kept: worktree-locked" in err


def test_not_a_repository_is_refused(tmp_path: Path) -> None:
    proc = run_factory(["runs", "--repo", str(tmp_path)])
    assert proc.returncode == 2 and b"factory: runs-not-a-repository:" in proc.stderr
    empty = init_repo(tmp_path / "empty")
    doc, table = _runs(empty)
    assert doc["runs"] == [] and "no run recorded" in table


def test_a_finished_run_marks_its_record_ended(tmp_path: Path, repo: Path) -> None:
    from factory.runs.registry import list_runs

    for scenario, out in (("approve", "a.json"), ("fail", "c.json")):
        _run(tmp_path, repo, scenario, out)
    records = list_runs(repo / ".git")
    assert len(records) == 2 and all(r.ended for r in records)
    # Twin: a run killed before its terminal receipt leaves its record as it was written.
    marker = tmp_path / "holding"
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "hold", str(marker), "--", "agent", "--repo", str(repo),
         "--task", "t", "--out", str(tmp_path / "h.json"), "--timeout-ms", "60000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import time

    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=60)
    held = [r for r in list_runs(repo / ".git") if r.receipt == str(tmp_path / "h.json")]
    assert len(held) == 1 and held[0].ended is False


def _at_a_terminal(args: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """``factory ARGS`` with stdout on a pseudo-terminal (stderr piped)."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "factory", *args], cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=slave, stderr=subprocess.PIPE, timeout=120, check=False,
        )  # fmt: skip
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    return proc.returncode, shown, proc.stderr


@pytest.mark.parametrize("command", [["runs"], ["runs", "prune", "--dry-run"]])
def test_at_a_terminal_the_table_alone_and_json_on_request(
    tmp_path: Path, command: list[str]
) -> None:
    repo = init_repo(tmp_path / "r")
    code, shown, table = _at_a_terminal(command, repo)
    assert code == 0 and b"{" not in shown and table  # a person reads the table
    code, shown, _ = _at_a_terminal([*command, "--json"], repo)
    assert code == 0 and json.loads(shown)["schema"].startswith("factory.runs")


def test_outside_a_repository_the_current_folder_is_named(tmp_path: Path) -> None:
    proc = run_factory(["runs"], cwd=tmp_path)
    assert proc.returncode == 2
    assert b"the current folder is not inside a git repository" in proc.stderr
    assert b"--repo" not in proc.stderr.split(b";")[0]

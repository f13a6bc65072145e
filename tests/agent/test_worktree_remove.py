"""``factory worktree remove OUT``: removes the worktree a run created only when it is clean
or holds exactly the receipt's candidate; every refusal touches nothing and has a twin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from factory.agent.admission import hold_worktree
from factory.agent.run import AgentDeps, run_agent
from factory.gitio.worktree import locate
from factory.provider_api import SubscriptionRoute
from tests.agent.creating_helpers import FAKE, FIX, Created, completed, draft
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write
from tests.gitio.helpers import registrations, snapshot
from tests.support.cli import run_factory
from tests.support.git import add_linked_worktree, git, init_repo


def untouched(tmp: Path) -> dict[str, str]:
    """Every byte under ``tmp`` except the object database: comparing a worktree with the
    candidate (as ``receipt verify`` does) may add loose objects, never change one."""
    return {k: v for k, v in snapshot(tmp).items() if "/.git/objects" not in f"/{k}"}


def test_dirty_worktree_is_refused_and_the_receipt_still_verifies(tmp_path: Path) -> None:
    run = completed(tmp_path)
    receipt_bytes = run.receipt.read_bytes()
    (run.wt / "notes.txt").write_text("mine, not the candidate\n")
    before = untouched(tmp_path)
    code, _, err = run.remove()
    assert code == 2 and b"factory: worktree-dirty:" in err
    assert untouched(tmp_path) == before and run.receipt.read_bytes() == receipt_bytes

    # verify re-derives as before: evidence and revision hold; the worktree no longer holds
    # the judged candidate (the extra file is part of what it would bind now).
    code, report, err = run.verify()
    assert code == 4 and report["revision"]["ok"] is True  # type: ignore[index]
    assert all(e["ok"] for e in report["evidence"])  # type: ignore[attr-defined]
    assert report["candidate"]["still_matches"] is False  # type: ignore[index]
    assert b"holds neither the judged candidate nor a commit of it" in err

    (run.wt / "notes.txt").unlink()  # back to exactly the candidate
    assert run.verify()[0] == 0
    code, removal, _ = run.remove()
    assert code == 0 and removal["state"] == "candidate"
    assert removal["identity"] == run.outcome.receipt.final_candidate().identity  # type: ignore[union-attr]
    assert not run.wt.exists()
    code, report, _ = run.verify()
    assert code == 0 and report["candidate"]["reason"] == "worktree-gone"  # type: ignore[index]
    assert git(run.repo, "rev-parse", "--verify", f"refs/heads/{run.branch}").strip()  # kept
    assert run.wt.name not in git(run.repo, "worktree", "list")


def test_a_clean_worktree_is_removed_with_its_ignored_files(tmp_path: Path) -> None:
    run = Created(tmp_path, [Step()], [])  # the worker changed nothing: failed, clean
    assert run.outcome.receipt.error is not None
    assert run.outcome.receipt.error.code == "no-candidate-change"
    (run.repo / ".git" / "info").mkdir(exist_ok=True)
    (run.repo / ".git" / "info" / "exclude").write_text("*.log\n")
    (run.wt / "build.log").write_text("ignored, as git worktree remove treats it\n")
    code, removal, _ = run.remove()
    assert code == 0 and removal["state"] == "clean" and removal["identity"] is None
    assert not run.wt.exists()


def _caller_supplied(run: Created, tmp: Path) -> Path:
    wt = add_linked_worktree(run.repo, tmp / "mine", branch="mine")
    receipt = tmp / "mine.json"
    agent, reviewer = FakeAgent([Step(effect=FIX)]), FakeReviewer([Step()])
    deps = AgentDeps(agent=agent, reviewer=reviewer, route=SubscriptionRoute())
    trio.run(lambda: run_agent(draft(tmp, wt, receipt=receipt), deps))
    return receipt


def _tampered(run: Created, tmp: Path) -> Path:
    value = json.loads(run.receipt.read_bytes())
    value["task"] = "something else"
    (tmp / "tampered.json").write_text(json.dumps(value))
    return tmp / "tampered.json"


Setup = Callable[[Created, Path], Path | None]
Undo = Callable[[Created, Path], None]


def _commit(run: Created, tmp: Path) -> None:
    # A commit of more than the candidate: not the judged candidate's commit.
    (run.wt / "mine.txt").write_text("the user's own work\n")
    git(run.wt, "add", "-A")
    git(run.wt, "commit", "-q", "-m", "work")


def _reset(run: Created, tmp: Path) -> None:
    git(run.wt, "reset", "-q", "--hard", run.outcome.receipt.worktree_creation.base_commit)  # type: ignore[union-attr]
    FIX(run.wt)


def _lock(run: Created, tmp: Path) -> None:
    git(run.repo, "worktree", "lock", str(run.wt))


def _unlock(run: Created, tmp: Path) -> None:
    git(run.repo, "worktree", "unlock", str(run.wt))


def _hide(run: Created, tmp: Path) -> None:
    git(run.wt, "update-index", "--assume-unchanged", "src/app.py")


def _unhide(run: Created, tmp: Path) -> None:
    git(run.wt, "update-index", "--no-assume-unchanged", "src/app.py")


@pytest.mark.parametrize(
    ("code", "setup", "undo"),
    [
        ("worktree-moved", _commit, _reset),
        ("worktree-locked", _lock, _unlock),
        ("worktree-not-plain", _hide, _unhide),
    ],
)
def test_state_refusals_touch_nothing_and_their_twins_remove(
    tmp_path: Path, code: str, setup: Undo, undo: Undo
) -> None:
    run = completed(tmp_path)
    setup(run, tmp_path)
    before = snapshot(tmp_path)
    rc, _, err = run.remove()
    assert rc == 2 and f"factory: {code}:".encode() in err, err
    assert snapshot(tmp_path) == before  # never unlocked, reset or cleared
    undo(run, tmp_path)
    rc, _, err = run.remove()
    assert rc == 0, err
    assert not run.wt.exists()


@pytest.mark.parametrize(
    ("code", "receipt"),
    [
        ("worktree-not-created-by-factory", _caller_supplied),
        ("worktree-receipt-not-verified", _tampered),
    ],
)
def test_receipt_refusals_and_the_real_receipt_twin(
    tmp_path: Path, code: str, receipt: Callable[[Created, Path], Path]
) -> None:
    run = completed(tmp_path)
    other = receipt(run, tmp_path)
    before = snapshot(tmp_path)
    rc, _, err = run.remove(other)
    assert rc == 2 and f"factory: {code}:".encode() in err, err
    assert snapshot(tmp_path) == before
    assert run.remove()[0] == 0


def test_a_running_receipt_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "running.json"

    def worker(wt: Path) -> None:
        shutil.copy(tmp_path / "receipt.json", copy)
        FIX(wt)

    run = Created(tmp_path, [Step(effect=worker)], [Step()])
    rc, _, err = run.remove(copy)
    assert rc == 2 and b"factory: receipt-not-terminal:" in err
    assert run.wt.is_dir()
    assert run.remove()[0] == 0


def test_a_busy_worktree_is_refused(tmp_path: Path) -> None:
    run = completed(tmp_path)
    with hold_worktree(locate(run.wt)):
        rc, _, err = run.remove()
    assert rc == 2 and b"factory: worktree-busy:" in err
    assert run.remove()[0] == 0


def test_a_gone_worktree_is_refused_and_its_registration_left(tmp_path: Path) -> None:
    run = completed(tmp_path)
    shutil.rmtree(run.wt)
    before = registrations(run.repo / ".git")
    rc, _, err = run.remove()
    assert rc == 2 and b"factory: created-worktree-gone:" in err
    assert registrations(run.repo / ".git") == before  # never pruned


def test_removal_touches_no_other_registration(tmp_path: Path) -> None:
    run = completed(tmp_path)
    add_linked_worktree(run.repo, tmp_path / "locked", branch="locked")
    git(run.repo, "worktree", "lock", str(tmp_path / "locked"))
    add_linked_worktree(run.repo, tmp_path / "gone", branch="gone")
    shutil.rmtree(tmp_path / "gone")
    ours = run.wt.name
    before = {
        k: v for k, v in registrations(run.repo / ".git").items() if k.split(os.sep)[0] != ours
    }
    assert run.remove()[0] == 0
    assert registrations(run.repo / ".git") == before
    assert not (run.repo / ".git" / "worktrees" / ours).exists()


def test_help_answers() -> None:
    proc = run_factory(["worktree", "remove", "--help"])
    assert proc.returncode == 0 and b"holds exactly the candidate" in proc.stdout


def test_a_non_repository_file_is_refused(tmp_path: Path) -> None:
    rc = run_factory(["worktree", "remove", str(tmp_path / "absent.json")]).returncode
    assert rc == 2
    write("x.json", "{}")(tmp_path)
    assert run_factory(["worktree", "remove", str(tmp_path / "x.json")]).returncode == 4


def test_an_abandoned_runs_clean_worktree_is_removed(tmp_path: Path) -> None:
    """Twin of the running refusal: the factory process that wrote the reservation was
    killed (SIGKILL, no terminal record), so the run is abandoned, never to finish."""
    repo = init_repo(tmp_path / "proj", {"src/app.py": "x = 1\n"})
    receipt, marker = tmp_path / "receipt.json", tmp_path / "holding"
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "hold", str(marker), "--", "agent", "--repo", str(repo),
         "--task", "t", "--out", str(receipt), "--timeout-ms", "60000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=60)
    assert json.loads(receipt.read_bytes())["status"] == "running"
    done = run_factory(["worktree", "remove", str(receipt)])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "clean"


def test_a_worktree_whose_head_commits_the_candidate_is_removed_and_the_commit_kept(
    tmp_path: Path,
) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take the approved change")
    head = git(run.wt, "rev-parse", "HEAD").strip()
    code, removal, err = run.remove()
    assert code == 0, err
    assert removal["state"] == "committed" and removal["committed_as"] == head
    assert removal["identity"] == run.outcome.receipt.final_candidate().identity  # type: ignore[union-attr]
    assert removal["branch_kept"] == run.branch
    assert f"the change lives on in commit {head[:12]} on branch {run.branch}".encode() in err
    assert not run.wt.exists()
    assert git(run.repo, "rev-parse", f"refs/heads/{run.branch}").strip() == head
    code, report, _ = run.verify()
    assert code == 0 and report["representation"] == {"state": "worktree-gone"}


def test_an_uncommitted_candidate_removal_says_its_only_copy_is_the_patch(tmp_path: Path) -> None:
    run = completed(tmp_path)
    code, removal, err = run.remove()
    assert code == 0 and removal["state"] == "candidate" and removal["committed_as"] is None
    assert b"its only copy is the receipt's evidence patch" in err and b"receipt apply" in err


def test_an_edit_on_top_of_the_candidates_commit_is_refused(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take it")
    (run.wt / "src" / "app.py").write_text("def add(a, b):\n    return 1\n")
    before = untouched(tmp_path)
    code, _, err = run.remove()
    assert code == 2 and b"factory: worktree-dirty:" in err
    assert untouched(tmp_path) == before
    git(run.wt, "checkout", "--", "src/app.py")  # twin: back to exactly the commit
    assert run.remove()[0] == 0


def test_a_commit_on_top_of_the_candidates_commit_is_refused(tmp_path: Path) -> None:
    run = completed(tmp_path)
    git(run.wt, "commit", "-q", "-am", "take it")
    (run.wt / "more.txt").write_text("more\n")
    git(run.wt, "add", "more.txt")
    git(run.wt, "commit", "-q", "-m", "more")
    code, _, err = run.remove()
    assert code == 2 and b"factory: worktree-moved:" in err
    git(run.wt, "reset", "-q", "--hard", "HEAD~1")  # twin: HEAD back on the candidate's commit
    assert run.remove()[0] == 0


def test_a_detached_commit_of_the_candidate_is_refused(tmp_path: Path) -> None:
    run = Created(tmp_path, [Step(effect=FIX)], [Step()], branch="")
    assert run.branch is None
    git(run.wt, "commit", "-q", "-am", "take it")
    code, _, err = run.remove()
    assert code == 2 and b"its commits are on no branch" in err
    assert run.wt.is_dir()
    git(run.wt, "reset", "-q", "HEAD~1")  # twin: back on the base, the candidate uncommitted
    code, removal, _ = run.remove()
    assert code == 0 and removal["state"] == "candidate"

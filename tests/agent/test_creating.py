"""``factory agent --repo R``: the run creates its own linked worktree, then admits it like
any other; the receipt binds the creation; the worktree stays whatever the outcome."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from factory.agent.creating import Prelude, prepare
from factory.agent.receipt import AgentReceipt
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.agent.verify import verify_json as verify
from factory.errors import FactoryError
from factory.gitio.create import WorktreeSpec
from factory.provider_api import SubscriptionRoute
from tests.agent.creating_helpers import FAKE, FIX, RUN_ID, draft
from tests.agent.fakes import FakeAgent, FakeReviewer, Step
from tests.gitio.helpers import assert_raw_checkout, booby_trapped, snapshot
from tests.support.cli import own_output
from tests.support.git import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})


async def run_created(prelude: Prelude, agent: list[Step], reviewer: list[Step]) -> RunOutcome:
    deps = AgentDeps(
        agent=FakeAgent(agent), reviewer=FakeReviewer(reviewer), route=SubscriptionRoute()
    )
    return await run_agent(prelude.planned.request, deps, prelude=prelude)


async def test_completed_run_binds_the_creation_and_verifies(tmp_path: Path, repo: Path) -> None:
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    seen: dict[str, object] = {}

    def worker(wt: Path) -> None:
        # While the worker runs, the reservation already names the created worktree.
        seen.update(json.loads((tmp_path / "receipt.json").read_bytes()))
        FIX(wt)

    outcome = await run_created(prelude, [Step(effect=worker)], [Step()])
    wt = tmp_path / f"proj.factory-run-{RUN_ID}"
    assert outcome.exit_code == 0
    r = outcome.receipt
    assert r.base is not None and r.base.isolation == "factory-created-linked-git-worktree"
    assert r.worktree_creation is not None
    assert r.worktree_creation.to_json_value() == {
        "repository": os.fspath(repo / ".git"),
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "branch": f"factory/run-{RUN_ID}",
        "path": os.fspath(wt),
    }
    assert r.worktree == os.fspath(wt) and r.base.commit == r.worktree_creation.base_commit
    assert seen["status"] == "running" and seen["worktree_creation"] == json.loads(
        r.worktree_creation.canonical()
    )
    report = verify(tmp_path / "receipt.json")
    assert report["ok"] is True and report["candidate"]["still_matches"] is True
    assert wt.is_dir()  # never removed automatically


async def test_a_failed_run_leaves_the_worktree_named_by_its_receipt(
    tmp_path: Path, repo: Path
) -> None:
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    outcome = await run_created(prelude, [Step(fail_code="provider-failed")], [])
    assert outcome.exit_code == 4 and outcome.receipt.status == "failed"
    assert outcome.receipt.worktree_creation is not None
    assert Path(outcome.receipt.worktree_creation.path).is_dir()
    assert verify(tmp_path / "receipt.json")["ok"] is True


async def test_a_creation_that_fails_after_the_reservation_is_a_failed_receipt(
    tmp_path: Path, repo: Path
) -> None:
    """The branch appears between planning and creation: git refuses, the run ends failed
    (exit 4, never 2: the receipt exists), the claimed folder stays and is named."""
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    git(repo, "branch", f"factory/run-{RUN_ID}")
    outcome = await run_created(prelude, [], [])
    r = outcome.receipt
    assert (outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "worktree-create-failed"
    assert r.base is None and r.phases == [] and r.worktree_creation is not None
    assert Path(r.worktree_creation.path).is_dir()
    assert verify(tmp_path / "receipt.json")["ok"] is True


async def test_trapped_repository_full_run_runs_no_program_of_the_repository(
    tmp_path: Path,
) -> None:
    """Creation, admission (status), candidate derivation, binding and verify: no smudge,
    hook or fsmonitor marker, and the base files are exactly their blobs."""
    repo, marks = booby_trapped(tmp_path)
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    wt = Path(prelude.record.path)
    checked: list[int] = []

    def worker(root: Path) -> None:
        checked.append(assert_raw_checkout(repo, root, prelude.record.base_commit))
        (root / "new.py").write_text("x = 1\n")

    outcome = await run_created(prelude, [Step(effect=worker)], [Step()])
    assert outcome.exit_code == 0, outcome.receipt.error
    assert checked == [4] and wt.is_dir()
    # Not even the clean filter: the admission's status trusted the stat data of the index
    # factory wrote (the candidate only adds a file no filter applies to).
    assert os.listdir(marks) == []


def test_outputs_inside_the_worktree_to_be_are_refused_before_anything(
    tmp_path: Path, repo: Path
) -> None:
    wt = tmp_path / "wt"
    before = snapshot(tmp_path)
    for bad in (
        draft(tmp_path, repo, receipt=wt / "r.json"),
        draft(tmp_path, repo, evidence=wt / "ev"),
        draft(tmp_path, repo, receipt=repo / ".git" / "r.json"),
        draft(tmp_path, repo, task=" "),
        draft(tmp_path, repo, timeout_ms=10),
    ):
        with pytest.raises(FactoryError) as refused:
            prepare(WorktreeSpec(repo, path=wt), bad, run_id=RUN_ID)
        assert refused.value.exit_code == 2
    assert snapshot(tmp_path) == before
    # Twin: the same outputs beside the worktree are fine.
    prepare(WorktreeSpec(repo, path=wt), draft(tmp_path, repo, receipt=tmp_path / "r.json"))


def fake_cli(scenario: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(FAKE), scenario, "--", "agent", "--timeout-ms", "5000", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_cli_repo_run_detached_and_stdout_is_the_receipt(tmp_path: Path, repo: Path) -> None:
    out = tmp_path / "r.json"
    wt = tmp_path / "chosen"
    proc = fake_cli(
        "approve", "--repo", str(repo / "src"), "--worktree-dir", str(wt), "--branch", "",
        "--task", "fix add()", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()
    r = AgentReceipt.model_validate(json.loads(proc.stdout))
    assert r.worktree_creation is not None and r.worktree_creation.branch is None
    assert r.worktree_creation.path == os.fspath(wt)
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # detached
    check = subprocess.run(
        [sys.executable, "-m", "factory", "receipt", "verify", str(out)], capture_output=True
    )
    assert check.returncode == 0, check.stdout
    show = subprocess.run(
        [sys.executable, "-m", "factory", "receipt", "show", str(out)], capture_output=True
    )
    assert b"created" in show.stdout and b"detached HEAD" in show.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--base", "nope"], "base-missing"),
        (["--branch", "main"], "worktree-branch-exists"),
        (["--worktree-dir", "{tmp}"], "worktree-dir-exists"),
        (["--worktree", "{tmp}"], "worktree-or-repo"),
        (["--repo", ""], "empty-path"),
    ],
)
def test_cli_refusals_exit_2_and_create_nothing(
    tmp_path: Path, repo: Path, args: list[str], code: str
) -> None:
    out = tmp_path / "r.json"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    repo_flag = [] if "--repo" in args else ["--repo", str(repo)]
    before = snapshot(tmp_path)
    proc = fake_cli("approve", *repo_flag, *args, "--task", "t", "--out", str(out))
    assert proc.returncode == 2 and proc.stdout == b""
    assert f"factory: {code}:".encode() in proc.stderr, proc.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", ["--base", "--worktree-dir", "--branch"])
def test_cli_creation_flags_need_repo(tmp_path: Path, repo: Path, flag: str) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "w", str(wt))
    proc = fake_cli(
        "approve", "--worktree", str(wt), flag, "x", "--task", "t", "--out", str(tmp_path / "r")
    )
    assert proc.returncode == 2 and b"creation-flag-needs-repo" in proc.stderr
    # Twin: the same run without the flag is admitted and completes.
    ok = fake_cli("approve", "--worktree", str(wt), "--task", "t", "--out", str(tmp_path / "r"))
    assert ok.returncode == 0, ok.stderr


async def test_an_interrupted_run_names_the_created_worktree(tmp_path: Path, repo: Path) -> None:
    prelude = prepare(WorktreeSpec(repo), draft(tmp_path, repo), run_id=RUN_ID)
    with trio.CancelScope() as scope:  # the worker cancels the run, then waits forever
        await run_created(prelude, [Step(effect=lambda wt: scope.cancel(), hang=True)], [])
    r = json.loads((tmp_path / "receipt.json").read_bytes())
    assert (r["status"], r["exit_code"]) == ("interrupted", 130)
    assert r["worktree_creation"]["path"] == prelude.record.path
    assert Path(prelude.record.path).is_dir()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")
@pytest.mark.skipif(
    not (Path(__file__).resolve().parents[2] / ".venv" / "bin" / "factory").exists(),
    reason="scripts/setup has not created .venv in this checkout",
)
def test_npm_passes_the_creation_flags_through(tmp_path: Path, repo: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    before = snapshot(tmp_path)
    proc = subprocess.run(
        ["npm", "run", "factory:agent", "--", "--repo", str(repo), "--base", "nope",
         "--task", "t", "--out", str(tmp_path / "r.json")],
        cwd=root, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and own_output(proc) == b""  # npm's own error object aside
    assert b"factory: base-missing:" in proc.stderr
    assert snapshot(tmp_path) == before

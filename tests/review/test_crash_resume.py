"""Crash injection at every write point (SIGKILL), then resume (issue 12): the lineage
reloads valid, a captured lens is never run again, and the flow ends approved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factory.review.store import ReviewStore
from tests.review.conftest import BASE_FILES, edit_parser, reviewer_doc, store_root
from tests.support.fake_cli import Fakes, install_fakes
from tests.support.git import init_repo

DRIVER = r"""
import os, signal, sys
from pathlib import Path
from factory.review import store
counter = Path(os.environ["CRASH_COUNTER"])
target = int(os.environ["CRASH_AT"])
def hook(point):
    n = int(counter.read_text() or "0") + 1 if counter.exists() else 1
    counter.write_text(str(n))
    with open(os.environ["CRASH_LOG"], "a") as fh:
        fh.write(point + "\n")
    if n == target:
        os.kill(os.getpid(), signal.SIGKILL)
store.write_hook = hook
from factory.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", DRIVER, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


def _setup(tmp: Path) -> tuple[Path, Fakes, dict[str, str]]:
    repo = init_repo(tmp / "repo", dict(BASE_FILES))
    edit_parser(repo)
    fakes = install_fakes(tmp / "fakes")
    fakes.mode(codex="canned")
    (fakes.bin / "canned.txt").write_text(json.dumps(reviewer_doc()))
    env = dict(os.environ, PATH=f"{fakes.bin}{os.pathsep}{os.environ['PATH']}")
    env.update(CRASH_COUNTER=str(tmp / "counter"), CRASH_LOG=str(tmp / "points.log"))
    return repo, fakes, env


def _flow(repo: Path, tmp: Path) -> list[list[str]]:
    evidence = tmp / "evidence.txt"
    evidence.write_bytes(b"pytest: 30 passed\n")
    return [
        ["review", "start", "--cwd", str(repo)],
        ["review", "lens", "--cwd", str(repo), "--lens", "reliability", "--timeout-ms", "60000"],
        ["review", "finalize", "--cwd", str(repo), "--evidence", str(evidence)],
    ]


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The write points of one uninterrupted flow, in order."""
    tmp = tmp_path_factory.mktemp("probe")
    repo, _, env = _setup(tmp)
    env["CRASH_AT"] = "0"
    for args in _flow(repo, tmp):
        assert _run(args, env, repo).returncode == 0
    return (tmp / "points.log").read_text().split()


def test_the_flow_has_a_write_point_at_each_durable_write(points: list[str]) -> None:
    assert points == [
        "create:before", "create:after",  # start
        "blob:after", "replace:before", "replace:after",  # lens: raw answer, then record
        "replace:before", "replace:after",  # finalize: complete-review
        "blob:after", "replace:before", "replace:after",  # finish: evidence, then record
        "receipt:before", "receipt:after",
    ]  # fmt: skip


@pytest.mark.parametrize("crash_at", range(1, 13))
def test_kill_9_at_each_write_point_then_resume(
    tmp_path: Path, points: list[str], crash_at: int
) -> None:
    if crash_at > len(points):
        pytest.fail(f"only {len(points)} write points; the parameter range is stale")
    tmp = tmp_path / "run"
    tmp.mkdir()
    repo, fakes, env = _setup(tmp)
    env["CRASH_AT"] = str(crash_at)
    crashed = False
    for args in _flow(repo, tmp):
        proc = _run(args, env, repo)
        if proc.returncode == -9:
            crashed = True
            break
    assert crashed, f"write point {crash_at} ({points[crash_at - 1]}) was not reached"
    store = ReviewStore(store_root(repo).parents[2])
    lineages = store.lineage_ids()
    captured = False
    for lineage in lineages:  # whatever is on disk loads valid: old or new, never half
        captured = bool(store.load(lineage).state.lens_results)
    runs_before = len(fakes.records("run"))
    env["CRASH_AT"] = "0"
    for args in _flow(repo, tmp):
        proc = _run(args, env, repo)
        if proc.returncode != 0:
            # a captured lens, or a lineage already past reviewing, is never run again
            assert b"review-lens-has-result" in proc.stderr or b"review-wrong-state" in proc.stderr
            assert args[1] == "lens", proc.stderr
    final = store.load(store.lineage_ids()[0])
    assert final.state.state == "approved" and final.receipt == "ok"
    runs = len(fakes.records("run"))
    assert runs == runs_before + (0 if captured else 1)  # a captured lens never runs again
    assert len(list(store_root(repo).glob("*/evidence/lens-reliability-*"))) == 1
    assert len(store.scan()) == 1  # crash residue (a .tmp- folder) is never a lineage

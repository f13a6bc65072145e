"""Bundles and payloads without a server: ref names, the lease, the shapes the coordinator
refuses, and the payload checks made before anything is submitted."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from factory.distributed.bundle import (
    BundleRefused,
    bundle_ref,
    make_bundle,
    push_bundle,
    remote_ref,
)
from factory.distributed.coordinator import BatchRefused, check_batch, workflow_id
from factory.distributed.fetched import check_bundle
from factory.distributed.payloads import RemoteBatch
from tests.distributed.helpers import DEMO_SCENARIO, rehearsal_batch, shared_remote
from tests.support.git import git

REV = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("task", "revision"),
    [
        ("t1", "sha1:" + "ab" * 20),
        ("t1", "sha256:xyz"),
        ("../x", REV),
        ("a..b", REV),
        ("", REV),
        ("-x", REV),
        ("x" * 65, REV),
        ("a/b", REV),
    ],
)
def test_a_ref_name_is_refused_unless_plain(task: str, revision: str) -> None:
    with pytest.raises(BundleRefused):
        bundle_ref(task, revision)


def test_a_plain_ref_name() -> None:
    assert bundle_ref("task-1.a_b", REV) == f"refs/factory/runs/task-1.a_b/{'ab' * 32}"


def _agent_run(tmp: Path) -> tuple[str, str, Path, Path]:
    """A real rehearsal run on a clone of a fresh remote: (remote, base, clone, receipt)."""
    remote, base = shared_remote(tmp)
    clone = tmp / "clone.git"
    git(tmp, "clone", "-q", "--bare", remote, str(clone))
    scenario = tmp / "scenario.json"
    scenario.write_text(DEMO_SCENARIO)
    receipt = tmp / "run" / "receipt.json"
    receipt.parent.mkdir()
    argv = [sys.executable, "-I", "-m", "factory", "agent", "--repo", str(clone)]
    argv += ["--base", base, "--task", "add greet", "--out", str(receipt)]
    argv += ["--worktree-dir", str(tmp / "wt"), "--rehearsal", str(scenario)]
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return remote, base, clone, receipt


def test_bundle_is_content_addressed_pushed_once_and_never_moved(tmp_path: Path) -> None:
    remote, base, clone, receipt = _agent_run(tmp_path)
    first = make_bundle(clone, receipt, "t1")
    again = make_bundle(clone, receipt, "t1")
    assert first == again  # same receipt, same commit
    tree = git(clone, "ls-tree", "--name-only", first.commit).split()
    assert tree == ["candidate", "receipt.json", "receipt.json.evidence"]
    parent = git(clone, "rev-parse", f"{first.commit}^").strip()
    assert git(clone, "rev-parse", f"{parent}^").strip() == base
    assert push_bundle(clone, remote, first) == "pushed"
    assert push_bundle(clone, remote, first) == "reused"
    other = dataclasses.replace(first, commit=parent)  # another commit under the same ref
    with pytest.raises(BundleRefused, match="another commit"):
        push_bundle(clone, remote, other)
    assert remote_ref(clone, remote, first.ref) == first.commit  # not moved


def test_fetched_bundle_verifies_and_a_foreign_shape_is_refused(tmp_path: Path) -> None:
    remote, _, clone, receipt = _agent_run(tmp_path)
    bundle = make_bundle(clone, receipt, "t1")
    push_bundle(clone, remote, bundle)
    cache = tmp_path / "cache.git"
    good = check_bundle(cache, remote, bundle.ref, bundle.revision, tmp_path / "out" / "ok")
    assert good.ok and good.outcome == "completed", good.reason
    # A bundle with one file more than receipt, evidence and candidate.
    extra = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=clone,
        input="a note\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    listing = git(clone, "ls-tree", bundle.commit) + f"100644 blob {extra}\tnote.txt\n"
    tree = subprocess.run(
        ["git", "mktree"], cwd=clone, input=listing, capture_output=True, text=True, check=True
    ).stdout.strip()
    forged = git(clone, "commit-tree", tree, "-m", "forged").strip()
    ref = f"refs/factory/runs/t2/{bundle.revision.split(':')[1]}"
    git(clone, "push", "-q", remote, f"{forged}:{ref}")
    bad = check_bundle(cache, remote, ref, bundle.revision, tmp_path / "out" / "bad")
    assert not bad.ok and bad.reason is not None and "bundle-invalid" in bad.reason
    missing = check_bundle(cache, remote, ref.replace("t2", "t3"), None, tmp_path / "out" / "m")
    assert not missing.ok and missing.reason is not None and "bundle-missing" in missing.reason


def test_a_bad_batch_is_refused_before_submission() -> None:
    good = rehearsal_batch("b", "/r.git", "a" * 40, 2)
    check_batch(good)  # the negative control: accepted
    cases = [
        dataclasses.replace(good, tasks=(good.tasks[0], good.tasks[0])),
        dataclasses.replace(good, tasks=(dataclasses.replace(good.tasks[0], task_id="a b"),)),
        dataclasses.replace(good, tasks=(dataclasses.replace(good.tasks[0], base_commit="HEAD"),)),
        dataclasses.replace(good, tasks=(dataclasses.replace(good.tasks[0], task=" "),)),
        dataclasses.replace(good, tasks=(dataclasses.replace(good.tasks[0], task_queue="q/1"),)),
        dataclasses.replace(
            good, tasks=(dataclasses.replace(good.tasks[0], task="x" * 2_100_000),)
        ),
    ]
    for batch in cases:
        with pytest.raises(BatchRefused):
            check_batch(batch)


def test_workflow_id_names_the_submission() -> None:
    one = rehearsal_batch("b", "/r.git", "a" * 40, 2)
    assert workflow_id(one) == workflow_id(rehearsal_batch("b", "/r.git", "a" * 40, 2))
    assert workflow_id(one) != workflow_id(rehearsal_batch("b", "/r.git", "a" * 40, 3))
    assert workflow_id(one).startswith("factory-batch-b-")
    assert isinstance(one, RemoteBatch)

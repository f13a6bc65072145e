"""Two concurrent finalize calls from the same revision (issue 12), real processes: when
they want different successors exactly one wins and the other gets the typed CAS conflict,
writing nothing (evidence blobs included); when the loser's own chain passes through the
winner's revision (an identical call, or one that asks for more) that step is its
idempotent success and it goes on from there. The store stays valid either way."""

from __future__ import annotations

import hashlib
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


def test_a_call_whose_chain_passes_through_the_winners_revision_goes_on_from_it(
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
    (sync / "go-b").write_text("go")
    out_b, err_b = b.communicate(timeout=120)
    assert b.returncode == 0, err_b  # a's revision is b's own second step
    assert json.loads(out_b)["state"] == "approved"
    again = review(*base[1:], "--evidence", str(evidence), cwd=repo)
    assert again.code == 0 and again.doc["applied"] == []  # an identical retry: nothing to do


def _race(repo: Path, tmp_path: Path, docs: list[dict[str, object]]) -> list[tuple[int, str]]:
    """Two finalize processes plan from the same revision, then one file releases both at
    once: they race on the store's compare-and-swap itself."""
    sync = tmp_path / "sync-race"
    sync.mkdir()
    procs = []
    for i, doc in enumerate(docs):
        result = write_json(tmp_path / f"race-{docs.index(doc)}.json", doc)  # twins: one file
        args = ["review", "finalize", "--cwd", str(repo), "--result", str(result)]
        procs.append(_spawn(args, repo, sync, f"r{i}"))
    for i in range(len(docs)):
        _wait(sync / f"planned-r{i}")
    for i in range(len(docs)):
        os.symlink(sync / "go", sync / f"go-r{i}")  # dangling until go exists
    (sync / "go").write_text("go")
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        outs.append((proc.returncode, out.decode() or err.decode()))
    return outs


def test_two_finalizes_released_together_exactly_one_wins_and_the_store_stays_valid(
    repo: Path, tmp_path: Path
) -> None:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    before = snapshot_bytes(repo)
    docs: list[dict[str, object]] = [
        {"findings": [], "evidence": [f"read the whole diff of src/parser.py, pass {i}"]}
        for i in range(2)
    ]
    outs = _race(repo, tmp_path, docs)
    codes = sorted(code for code, _ in outs)
    assert codes == [0, 4], outs
    [win] = [i for i, (code, _) in enumerate(outs) if code == 0]
    winner, loser = json.loads(outs[win][1]), json.loads(outs[1 - win][1])
    assert winner["state"] == "validating"
    assert loser["error"]["code"] == "review-cas-conflict"
    status = review("status", "--cwd", str(repo), cwd=repo)
    assert status.code == 0, status.stderr
    [row] = status.doc["lineages"]
    assert row["state"] == "validating" and row["lineage"] == winner["lineage"]
    changed = {k for k, v in snapshot_bytes(repo).items() if before.get(k) != v}
    raw = (tmp_path / f"race-{win}.json").read_bytes()
    blob = f"lens-reliability-{hashlib.sha256(raw).hexdigest()}"
    lid = winner["lineage"]
    assert changed == {f"{lid}/review-state.json", f"{lid}/evidence/{blob}"}  # none of the loser
    lost = tmp_path / f"race-{1 - win}.json"
    retry = review("finalize", "--cwd", str(repo), "--result", str(lost), cwd=repo)
    assert retry.code == 2 and retry.doc["error"]["code"] == "review-input-conflict"
    assert retry.doc["next"] == row["next"]  # the rerun reloads and names the way on


def test_twin_two_identical_finalizes_released_together_both_succeed_once(
    repo: Path, tmp_path: Path
) -> None:
    """The negative control: an identical retry is an idempotent success, not a conflict,
    and the record is written once."""
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo).code == 0
    outs = _race(repo, tmp_path, [reviewer_doc(), reviewer_doc()])
    assert [code for code, _ in outs] == [0, 0], outs
    views = [json.loads(text) for _, text in outs]
    assert (
        views[0]["store_revision"] == views[1]["store_revision"]
        and views[0]["state"] == "validating"
    )

"""The lens runner with fake CLIs for the fault table (issue 12): preflight spends nothing,
an answer goes straight into the store, a lost capture is preserved and replayed through
the full validation path, and a lens never runs twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.review.incident import load_preserved
from tests.review.cli_helpers import (
    Ran,
    edit_parser,
    review,
    reviewer_doc,
    run_lens,
    snapshot_bytes,
    store_root,
)
from tests.support.fake_cli import Fakes, install_fakes

ANSWER = reviewer_doc(
    [
        {
            "location": "src/parser.py:2",
            "severity": "WARNING",
            "claim": "f0's new sign is not covered by a test",
            "proof_refs": ["no test mentions f0"],
        }
    ]
)


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    f = install_fakes(tmp_path / "fakes")
    f.mode(codex="canned")
    (f.bin / "canned.txt").write_text(json.dumps(ANSWER))
    return f


@pytest.fixture
def env(fakes: Fakes, tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        PATH=f"{fakes.bin}{os.pathsep}{os.environ['PATH']}",
        FACTORY_STATE_DIR=str(tmp_path / "state"),
    )


@pytest.fixture
def started(repo: Path, env: dict[str, str]) -> Path:
    edit_parser(repo)
    assert review("start", "--cwd", str(repo), cwd=repo, env=env).code == 0
    return repo


def lens(repo: Path, env: dict[str, str], *extra: str) -> Ran:
    return run_lens(repo, *extra, env=env)


def test_a_lens_runs_once_read_only_with_the_binding_and_is_captured(
    started: Path, env: dict[str, str], fakes: Fakes
) -> None:
    ran = lens(started, env)
    assert ran.code == 0, ran.stderr
    assert ran.doc["finding_ids"] == ["R3-001"] and ran.doc["route"] == "subscription"
    assert ran.doc["missing_lenses"] == [] and ran.doc["state"] == "reviewing"
    (run,) = fakes.records("run")
    argv = run["argv"]
    assert isinstance(argv, list)
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    schema = run["schema"]
    assert set(schema["required"]) == {"findings", "evidence", "lens", "binding"}  # type: ignore[index]
    prompt = str(run["prompt"])
    assert prompt.startswith("factory.review-lens-binding/1\nlineage=")
    assert (store_root(started) / ran.doc["lineage"] / "evidence").is_dir()
    again = lens(started, env)
    assert again.code == 2 and again.doc["error"]["code"] == "review-lens-has-result"
    assert len(fakes.records("run")) == 1  # never twice
    done = review(
        "finalize",
        "--cwd",
        str(started),
        "--evidence",
        "-",
        input=b"tests: 3 passed\n",
        cwd=started,
        env=env,
    )
    assert done.code == 0 and done.doc["state"] == "approved"


def test_preflight_refuses_before_anything_is_spent(
    repo: Path, env: dict[str, str], fakes: Fakes
) -> None:
    (repo / "docs" / "guide.md").write_text("# other\n")
    review("start", "--cwd", str(repo), cwd=repo, env=env)
    low = lens(repo, env)
    assert low.code == 2 and low.doc["error"]["code"] == "review-lens-not-selected"
    (repo / "docs" / "guide.md").write_text("# changed again\n")
    review("finalize", "--cwd", str(repo), "--failed", cwd=repo, env=env)
    edit_parser(repo)
    review("start", "--cwd", str(repo), cwd=repo, env=env)
    (repo / "README.md").write_text("moved after start\n")
    moved = lens(repo, env)
    assert moved.code == 2 and moved.doc["error"]["code"] == "review-candidate-changed"
    # following next never leads back to the lens that was just refused (no cycle)
    assert not any(n.startswith("factory review lens ") for n in moved.doc["next"])
    assert moved.doc["next"][0].endswith(" --failed"), moved.doc["next"]
    assert f"(next: {moved.doc['next'][0]})" in moved.stderr
    (repo / "README.md").write_text("sample\n")  # the twin: the candidate restored
    assert lens(repo, env).code == 0
    assert len(fakes.records("run")) == 1  # only the restored candidate's lens was spent


def test_a_failed_provider_run_captures_nothing_and_the_lens_may_run_again(
    started: Path, env: dict[str, str], fakes: Fakes
) -> None:
    before = snapshot_bytes(started)
    fakes.mode(codex="not-logged-in")
    out = lens(started, env)
    assert out.code == 4 and out.doc["error"]["code"] == "provider-auth-required"
    assert snapshot_bytes(started) == before
    fakes.mode(codex="canned")
    assert lens(started, env).code == 0


@pytest.mark.parametrize(
    "answer",
    [
        '{"findings": [], "evidence": ["n/a"]}',
        '{"findings": [], "evidence": ["read it"], "score": 1}',
        "I approve.",
    ],
)
def test_an_invalid_answer_is_preserved_and_the_lens_may_run_again(
    started: Path, env: dict[str, str], fakes: Fakes, answer: str
) -> None:
    (fakes.bin / "canned.txt").write_text(answer)
    out = lens(started, env)
    assert out.code == 4 and out.doc["error"]["code"] == "review-capture-failed"
    rerun = next(n for n in out.doc["next"] if n.startswith("factory review lens --lineage "))
    assert rerun.endswith(" --lens reliability")  # the command is in next, not only in prose
    assert f"(next: {rerun});" in out.stderr  # and kept whole on stderr after a capped fact
    preserved = Path(out.doc["preserved"])
    doc, payload = load_preserved(preserved)
    assert payload == answer.encode() and doc.reason_code == "review-input-invalid"
    refused = review(
        "finalize", "--cwd", str(started), "--result", str(preserved), cwd=started, env=env
    )
    assert refused.code == 2 and refused.doc["error"]["code"] == "review-preserved-not-result"
    replay = review(
        "finalize",
        "--cwd",
        str(started),
        "--replay-preserved",
        str(preserved),
        cwd=started,
        env=env,
    )
    assert replay.code == 2 and replay.doc["error"]["code"] == "review-input-invalid"  # same door
    (fakes.bin / "canned.txt").write_text(json.dumps(ANSWER))
    assert lens(started, env).code == 0  # an invalid answer is not a judgement: rerun allowed


_HOLD = """
import sys, time
from pathlib import Path
from factory.review.lock import StoreLock
with StoreLock(Path(sys.argv[1]), command="test/hold"):
    print("held", flush=True)
    time.sleep(120)
"""


def _in_flight(repo: Path, env: dict[str, str], fakes: Fakes) -> subprocess.Popen[bytes]:
    fakes.mode(codex="canned-after-go")
    cmd = [
        sys.executable,
        "-m",
        "factory",
        "review",
        "lens",
        "--cwd",
        str(repo),
        "--lens",
        "reliability",
        "--timeout-ms",
        "60000",
    ]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    fakes.wait_records("run", 1, timeout=30)
    assert fakes.records("run"), "the fake codex never started"
    return proc


def test_a_capture_lost_to_a_busy_store_is_preserved_then_replayed(
    started: Path, env: dict[str, str], fakes: Fakes
) -> None:
    proc = _in_flight(started, env, fakes)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(store_root(started) / "LOCK")], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        (fakes.bin / "go.txt").write_text("go")
        out, err = proc.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert proc.returncode == 4, err
    doc = json.loads(out)
    assert (
        doc["error"]["code"] == "review-capture-failed"
        and "--replay-preserved" in doc["error"]["message"]
    )
    assert doc["next"] == [  # the twin of the rerun case: here the answer is replayed
        f"factory review finalize --lineage {doc['preserved'].split('/')[-3]} "
        f"--replay-preserved {doc['preserved']}"
    ]
    again = lens(started, env)  # paying twice for an answer that exists is refused
    assert again.code == 2 and again.doc["error"]["code"] == "review-lens-preserved"
    replay = review(
        "finalize",
        "--cwd",
        str(started),
        "--replay-preserved",
        doc["preserved"],
        cwd=started,
        env=env,
    )
    assert replay.code == 0, replay.stderr
    assert replay.doc["applied"] == ["record-lens", "complete-review"]
    assert replay.doc["state"] == "validating"
    assert len(fakes.records("run")) == 1


def test_a_lineage_that_moved_while_the_lens_ran_fails_closed(
    started: Path, env: dict[str, str], fakes: Fakes
) -> None:
    proc = _in_flight(started, env, fakes)
    stop = review("finalize", "--cwd", str(started), "--failed", cwd=started, env=env)
    assert stop.doc["state"] == "escalated"
    (fakes.bin / "go.txt").write_text("go")
    out, _ = proc.communicate(timeout=60)
    doc = json.loads(out)
    assert proc.returncode == 4 and doc["error"]["code"] == "review-capture-failed"
    replay = review(
        "finalize",
        "--cwd",
        str(started),
        "--lineage",
        stop.doc["lineage"],
        "--replay-preserved",
        doc["preserved"],
        cwd=started,
        env=env,
    )
    assert replay.code == 2  # an escalated lineage takes no late judgement


def test_a_lens_past_its_deadline_is_stopped_and_captures_nothing(
    started: Path, env: dict[str, str], fakes: Fakes
) -> None:
    fakes.mode(codex="network-loss")
    t0 = time.monotonic()
    out = review(
        "lens",
        "--cwd",
        str(started),
        "--lens",
        "reliability",
        "--timeout-ms",
        "1500",
        cwd=started,
        env=env,
    )
    assert out.code == 4 and out.doc["error"]["code"] in ("provider-network", "provider-timeout")
    assert time.monotonic() - t0 < 60
    assert fakes.survivors() == []
    status = review("status", "--cwd", str(started), cwd=started, env=env)
    assert status.doc["lineages"][0]["state"] == "reviewing"

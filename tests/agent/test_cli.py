"""``factory agent`` and ``factory receipt verify`` as users run them (real subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.agent.verify import failed_checks
from tests.agent.cli_helpers import FAKE, agent_args, evidence_files, fake
from tests.support.cli import run_factory
from tests.support.git import git
from tests.support.layout import Layout


def verify(layout: Layout) -> tuple[int, dict[str, object]]:
    proc = run_factory(["receipt", "verify", str(layout.receipt)])
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("scenario", "code", "status"),
    [("approve", 0, "completed"), ("reject", 3, "rejected"), ("fail", 4, "failed")],
)
def test_exit_codes_and_stdout_is_the_receipt(
    layout: Layout, scenario: str, code: int, status: str
) -> None:
    proc = fake(scenario, agent_args(layout))
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == layout.receipt.read_bytes()
    receipt = json.loads(proc.stdout)
    assert receipt["status"] == status and receipt["exit_code"] == code
    assert b"fix add()" not in proc.stderr  # no task text in diagnostics/progress
    rc, report = verify(layout)
    assert rc == 0 and report["ok"] is True


def test_refusal_via_cli_runs_nothing(layout: Layout) -> None:
    args = agent_args(layout)
    args[args.index("--worktree") + 1] = str(layout.repo)
    proc = fake("approve", args)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"linked-worktree-required" in proc.stderr
    assert not layout.receipt.exists() and not layout.evidence.exists()


@pytest.mark.parametrize(
    "extra",
    [["--bogus"], ["--task", "again"], ["--timeout-ms", "soon"], ["--progress", "xml"]],
    ids=["unknown", "duplicate", "not-int", "bad-choice"],
)
def test_bad_flags_exit_2(layout: Layout, extra: list[str]) -> None:
    proc = run_factory(agent_args(layout, *extra))
    assert proc.returncode == 2 and proc.stdout == b""
    assert not layout.receipt.exists()


def test_sigint_during_the_worker(layout: Layout, tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "spawn", str(marker), "--", *agent_args(layout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    child = int(marker.read_text())
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    receipt = json.loads(layout.receipt.read_bytes())
    assert out == layout.receipt.read_bytes()
    assert receipt["status"] == "interrupted" and receipt["exit_code"] == 130
    assert receipt["phases"][0]["outcome"] == "interrupted"
    assert not Path(f"/proc/{child}").exists()  # no survivor (reaped, not a zombie)
    rc, report = verify(layout)
    assert rc == 0 and report["status"] == "interrupted"


# -- receipt verify -------------------------------------------------------------------------


@pytest.fixture
def completed(layout: Layout) -> Layout:
    proc = fake("reject", agent_args(layout))  # four calls: the richest receipt
    assert proc.returncode == 3, proc.stderr
    return layout


def test_verify_negative_control(completed: Layout) -> None:
    rc, report = verify(completed)
    assert rc == 0 and report["ok"] is True
    assert report["candidate"] == {
        "checked": True,
        "identity": json.loads(completed.receipt.read_bytes())["candidate"]["repaired"]["identity"],
        "observed": report["candidate"]["observed"],  # type: ignore[index]
        "still_matches": True,
        "gating": True,
    }
    assert len(report["evidence"]) >= 12  # type: ignore[arg-type]


def test_verify_catches_a_flipped_evidence_byte(completed: Layout) -> None:
    target = next(p for p in evidence_files(completed) if p.name.startswith("worker-stdout-"))
    data = bytearray(target.read_bytes())
    data[0] ^= 0x01
    target.write_bytes(bytes(data))
    rc, report = verify(completed)
    assert rc == 4 and report["ok"] is False
    bad = [e for e in report["evidence"] if not e["ok"]]  # type: ignore[attr-defined]
    assert [(e["role"], e["problem"]) for e in bad] == [("worker-stdout", "digest-mismatch")]


def test_verify_catches_a_missing_evidence_file(completed: Layout) -> None:
    target = next(p for p in evidence_files(completed) if "candidate-patch" in p.name)
    target.unlink()
    rc, report = verify(completed)
    assert rc == 4
    assert any(e["problem"] == "missing" for e in report["evidence"])  # type: ignore[attr-defined]


def test_verify_catches_an_edited_receipt_field(completed: Layout) -> None:
    value = json.loads(completed.receipt.read_bytes())
    value["status"] = "completed"
    value["exit_code"] = 0
    from factory.documents.canonical import canonical_bytes

    completed.receipt.write_bytes(canonical_bytes(value) + b"\n")
    rc, report = verify(completed)
    assert rc == 4 and report["revision"]["ok"] is False  # type: ignore[index]


def test_verify_catches_a_reformatted_receipt(completed: Layout) -> None:
    value = json.loads(completed.receipt.read_bytes())
    completed.receipt.write_text(json.dumps(value, indent=2))
    rc, report = verify(completed)
    assert rc == 4 and report["canonical_bytes"] is False
    assert report["revision"]["ok"] is True  # type: ignore[index]


def test_verify_catches_a_worktree_changed_after_the_run(completed: Layout) -> None:
    (completed.wt / "src" / "app.py").write_text("def add(a, b):\n    return 42\n")
    rc, report = verify(completed)
    assert rc == 4 and report["candidate"]["still_matches"] is False  # type: ignore[index]


def test_a_commit_of_the_candidate_after_the_run_is_not_a_mismatch(completed: Layout) -> None:
    # Issue 22: the candidate moved into a commit on the base, and stays the candidate.
    git(completed.wt, "add", "-A")
    git(completed.wt, "commit", "-qm", "published")
    rc, report = verify(completed)
    assert rc == 0 and report["candidate"]["still_matches"] is False  # type: ignore[index]
    assert report["representation"]["state"] == "committed"  # type: ignore[index]
    # Twin: the commit amended to other content is caught.
    (completed.wt / "src" / "app.py").write_text("def add(a, b):\n    return 42\n")
    git(completed.wt, "commit", "-q", "-a", "--amend", "-m", "other")
    rc, report = verify(completed)
    assert rc == 4 and report["representation"]["state"] == "mismatch"  # type: ignore[index]


def test_verify_ignores_ignored_files_and_a_removed_worktree(completed: Layout) -> None:
    (completed.wt / "ignored.log").write_text("new log line\n")
    assert verify(completed)[0] == 0
    git(completed.repo, "worktree", "remove", "--force", str(completed.wt))
    rc, report = verify(completed)
    assert rc == 0 and report["candidate"]["reason"] == "worktree-gone"  # type: ignore[index]


def test_verify_refuses_garbage_and_missing(layout: Layout) -> None:
    layout.receipt.write_text("not json")
    proc = run_factory(["receipt", "verify", str(layout.receipt)])
    assert proc.returncode == 4 and b"receipt-invalid" in proc.stderr
    proc = run_factory(["receipt", "verify", str(layout.out / "absent.json")])
    assert proc.returncode == 2


def _can_unshare_mounts() -> bool:
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare_mounts(), reason="needs a private mount namespace (root)")
@pytest.mark.parametrize("flag", ["--out", "--evidence"])
def test_bind_mount_alias_is_refused(layout: Layout, tmp_path: Path, flag: str) -> None:
    # A bind mount of the worktree elsewhere is the same folder by device+inode. The mount
    # lives in a private mount namespace that ends with the command.
    alias = tmp_path / "bound"
    alias.mkdir()
    args = agent_args(layout)
    if flag == "--out":
        args[args.index("--out") + 1] = str(alias / "r.json")
    else:
        args += ["--evidence", str(alias / "ev")]
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    proc = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(layout.wt),
            str(alias),
            sys.executable,
            str(FAKE),
            "approve",
            "--",
            *args,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    code = b"receipt-inside-worktree" if flag == "--out" else b"evidence-inside-worktree"
    assert code in proc.stderr
    assert not (layout.wt / "r.json").exists() and not (layout.wt / "ev").exists()
    assert not layout.receipt.exists()


def test_verify_catches_a_consistently_reclosed_forgery(completed: Layout) -> None:
    # Someone edits a field AND recomputes the revision: the revision is not a signature,
    # but a body that contradicts itself still fails.
    from factory.agent.receipt import AgentReceipt, receipt_bytes

    r = AgentReceipt.model_validate(json.loads(completed.receipt.read_bytes()))
    forged = r.model_copy(update={"status": "completed", "exit_code": 0}).closed()
    completed.receipt.write_bytes(receipt_bytes(forged))
    rc, report = verify(completed)
    assert rc == 4 and report["revision"]["ok"] is True  # type: ignore[index]
    assert "verdict-does-not-match-status" in report["consistency_problems"]  # type: ignore[operator]


# `receipt verify` says on stderr which checks failed (observed: exit 4 with an empty
# stderr), and says nothing there when every check holds.
def test_a_failed_verification_names_its_checks_on_stderr(completed: Layout) -> None:
    target = next(p for p in evidence_files(completed) if p.name.startswith("worker-stdout-"))
    target.write_bytes(target.read_bytes() + b"x")
    (completed.wt / "late.txt").write_text("changed after the run\n")
    git(completed.wt, "add", "late.txt")
    proc = run_factory(["receipt", "verify", str(completed.receipt)])
    assert proc.returncode == 4
    line = proc.stderr.decode().strip()
    assert line.startswith("factory: receipt-verification-failed: "), line
    assert "evidence worker-stdout: size-mismatch" in line
    assert "the worktree holds neither the judged candidate nor a commit of it" in line
    assert "(differing paths: late.txt)" in line


def test_a_passing_verification_keeps_stderr_empty(completed: Layout) -> None:
    proc = run_factory(["receipt", "verify", str(completed.receipt)])
    assert proc.returncode == 0 and proc.stderr == b""


def test_failed_checks_covers_every_gate() -> None:
    from factory.agent.verification import (
        CandidateCheck,
        EvidenceCheck,
        PatchCheck,
        ReceiptVerification,
        RevisionCheck,
    )

    report = ReceiptVerification(
        receipt="r.json",
        status="running",
        exit_code=None,
        route="subscription",
        execution="subscription",
        terminal=False,
        liveness=None,
        revision=RevisionCheck(
            ok=False, stored="sha256:" + "a" * 64, computed="sha256:" + "b" * 64
        ),
        canonical_bytes=False,
        consistency_problems=["exit code 0 contradicts status failed"],
        evidence=[
            EvidenceCheck(role="r", path="r", ok=False, problem="missing"),
            EvidenceCheck(role="s", path="s", ok=True, problem=None),
        ],
        patches=[
            PatchCheck(
                candidate="initial", checked=True, ok=False, problem="patch-does-not-apply-to-base"
            ),
            PatchCheck(candidate="repaired", checked=False, ok=None),
        ],
        candidate=CandidateCheck(checked=True, identity=None, gating=True, still_matches=False),
        ok=False,
    )
    expected = [
        "revision does not match the body",
        "bytes are not the canonical form",
        "the run never finished (status running)",
        "inconsistent: exit code 0 contradicts status failed",
        "evidence r: missing",
        "initial candidate: patch-does-not-apply-to-base",
        "the worktree holds neither the judged candidate nor a commit of it",
    ]
    assert failed_checks(report) == expected
    assert failed_checks(report.to_json_value()) == expected  # the JSON value reads the same

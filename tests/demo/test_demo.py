"""``factory demo``: the README's main job, end to end with the real pinned CLIs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from factory.demo.sample import FILES
from factory.rehearsal import load_scenario
from tests.support.cli import run_factory
from tests.support.schemas import assert_valid
from tests.support.screens import FRAGMENT
from tests.support.screens import HEX as HEXES
from tests.support.tmux import Terminal

FACTORY = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "factory"


@pytest.mark.realcli
def test_demo_runs_the_whole_cycle_and_says_it_is_a_rehearsal(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    proc = run_factory(["demo", "--dir", str(demo), "--progress", "jsonl", "--json"], timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    assert proc.stdout == (demo / "demo-report.json").read_bytes()  # the same bytes
    # With --json the readable screen still reaches the person, on stderr.
    assert b"outcome    completed (exit 0)" in proc.stderr
    assert report["schema"] == "factory.demo-report/1"
    assert report["execution"].startswith("rehearsal: scripted loopback model")
    assert report["exitCode"] == 0
    assert report["verification"]["ok"] is True
    assert b"REHEARSAL" in proc.stderr
    receipt = json.loads((demo / "receipt.json").read_bytes())
    assert receipt["status"] == "completed"
    assert receipt["execution"] == report["execution"]
    assert [p["role"] for p in receipt["phases"]] == ["worker", "reviewer", "repair", "reviewer"]
    # The demo makes no worktree of its own: 'factory agent --repo' created it (issue 16).
    assert receipt["base"]["isolation"] == "factory-created-linked-git-worktree"
    creation = receipt["worktree_creation"]
    assert creation["path"] == str((demo / "worktree").resolve()) == receipt["worktree"]
    assert creation["branch"] == "demo/fix-median"
    assert creation["base_commit"] == receipt["base"]["commit"]
    # The fix and the test really landed in the worktree, through Claude Code's own tools,
    # and nothing was committed or staged.
    worktree = demo / "worktree"
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (worktree / "stats.py").read_text()
    assert (worktree / "test_stats.py").is_file()
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=worktree, capture_output=True, check=True
    )
    assert staged.stdout == b""
    # `factory receipt verify` agrees from the outside, and the candidate still matches.
    verify = run_factory(["receipt", "verify", str(demo / "receipt.json")])
    assert verify.returncode == 0, verify.stdout.decode()
    # Every document of the run satisfies the schema `factory schema` publishes for it.
    assert_valid("demo-report", report)
    assert_valid("agent-receipt", receipt)
    assert_valid("receipt-verification", json.loads(verify.stdout))
    progress = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith(b"{")]
    assert progress
    for record in progress:
        assert_valid("agent-progress", record)


def test_demo_refuses_an_existing_folder_and_touches_nothing(tmp_path: Path) -> None:
    demo = tmp_path / "taken"
    demo.mkdir()
    (demo / "keep.txt").write_text("mine\n")
    proc = run_factory(["demo", "--dir", str(demo)])
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert sorted(p.name for p in demo.iterdir()) == ["keep.txt"]


def test_demo_scenario_edits_match_the_sample_bug() -> None:
    """The scripted Edit must apply to the sample exactly once, or the demo cannot work."""
    scenario = load_scenario(
        Path(__file__).resolve().parents[2] / "factory" / "demo" / "scenario.json"
    )
    worker = scenario.invocations[0]
    edits = [c for c in worker.tool_calls if c.tool == "Edit"]
    assert len(edits) == 1
    assert FILES["stats.py"].count(edits[0].old_string) == 1
    assert [i.role for i in scenario.invocations] == ["worker", "reviewer", "repair", "reviewer"]


@pytest.mark.realcli
def test_the_demo_ends_on_the_outcome_and_its_hints_work_as_typed(tmp_path: Path) -> None:
    """At an 80-column terminal the last screen is the human outcome, and each "next"
    command, typed as printed in the same shell, works (issue 9 §1)."""
    demo = tmp_path / "demo"
    user = tmp_path / "user"  # the user stands in a folder of their own
    user.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm-256color"}
    with Terminal(tmp_path, cols=80, rows=24, cwd=user, env=env) as term:
        term.type(f'{FACTORY} demo --dir ../demo; echo "demo""-exit=$?"')
        screen = term.wait_for("demo-exit=", timeout=300)
        lines = [ln for ln in screen.splitlines() if ln.strip() and ln.strip() != "$"]
        assert lines[-1] == "demo-exit=0", screen
        # The whole closing block is on the last 80x24 screen ...
        assert "REHEARSAL: a scripted loopback model" in screen, screen
        # ... and reads as below once the terminal's soft wraps are joined.
        whole = term.history()  # before the hints below clear the screen
        lines = [ln for ln in whole.splitlines() if ln.strip()]
        tail = "\n".join(lines[-16:])
        for expected in (
            "REHEARSAL: a scripted loopback model",
            "outcome    completed (exit 0)",
            "verdicts   worker ok → review REQUEST_CHANGES → repair ok → fresh review",
            "verified   yes: revision, canonical bytes, 15 evidence files",
            "receipt    ../demo/receipt.json",
            "report     ../demo/demo-report.json",
            "next:",
        ):
            assert expected in tail, screen
        assert "{" not in tail  # no JSON at the end
        hints = [ln.strip() for ln in lines if ln.startswith("  ") and "receipt " in ln]
        assert len(hints) == 4, screen
        assert all(h.startswith(str(FACTORY)) for h in hints)
        for n, hint in enumerate(hints):
            term.type("clear")
            term.type(f'{hint} > /dev/null; echo "hint-{n}""-exit=$?"')
            assert f"hint-{n}-exit=0" in term.wait_for(f"hint-{n}-exit=", timeout=120)
    assert (demo / "receipt.html").is_file()
    report = json.loads((demo / "demo-report.json").read_bytes())
    assert report["schema"] == "factory.demo-report/1" and report["exitCode"] == 0
    # Nothing the demo printed at 80 columns holds a hash in pieces (issue 28): every hex
    # run on the screen starts one of the receipt's own hashes (a piece after a break
    # would not), and the receipt's revision is there whole.
    receipt_text = (demo / "receipt.json").read_text()
    known = set(HEXES.findall(receipt_text))
    hexes = [f for f in FRAGMENT.findall(whole) if not f.isdigit()]  # not a mode (100644)
    pieces = [f for f in hexes if not any(k.startswith(f) for k in known)]
    assert not pieces, pieces
    assert json.loads(receipt_text)["revision"] in whole


@pytest.mark.realcli
def test_demo_sends_spans_whose_trace_the_receipt_names(tmp_path: Path) -> None:
    from tests.support.otlp import http_receiver

    demo = tmp_path / "demo"
    with http_receiver() as (port, received):
        proc = run_factory(
            ["demo", "--dir", str(demo), "--json", "--otel-endpoint", f"http://127.0.0.1:{port}"],
            timeout=300,
        )
        spans = received.spans()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    receipt = json.loads((demo / "receipt.json").read_bytes())
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        f"factory.agent.{n}"
        for n in ("cycle", "worker", "initial_review", "repair", "final_review")
    )
    assert {s["trace_id"] for s in spans} == {receipt["trace_id"]}
    assert {s["status"] for s in spans} == {"OK"}


def test_demo_refuses_a_named_endpoint_before_creating_anything(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    proc = run_factory(["demo", "--dir", str(demo), "--otel-endpoint", "http://localhost:4318"])
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"factory: otel-endpoint-refused:" in proc.stderr
    assert not demo.exists()

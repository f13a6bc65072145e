"""End-to-end with the pinned real CLIs on the rehearsal route (SPEC P-5, A-3…A-8)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.agent.scenarios import GREET, TEST, reviewer, scenario, worker
from tests.support.cli import run_factory
from tests.support.layout import Layout

pytestmark = pytest.mark.realcli


def agent(layout: Layout, scenario_path: Path) -> tuple[int, dict[str, object]]:
    proc = run_factory(
        [
            "agent",
            "--worktree",
            str(layout.wt),
            "--task",
            "add greet() with a test",
            "--out",
            str(layout.receipt),
            "--timeout-ms",
            "120000",
            "--progress",
            "jsonl",
            "--rehearsal",
            str(scenario_path),
        ],
        timeout=600,
    )
    assert proc.stdout == layout.receipt.read_bytes(), proc.stderr[-2000:]
    # A-9 with the real CLIs: no task text, path or provider output reaches progress.
    leaks = (b"add greet() with a test", os.fsencode(layout.wt), os.fsencode(layout.out))
    for secret in (*leaks, b"Wrote ", b"scripted"):
        assert secret not in proc.stderr, secret
    assert proc.stderr and all(
        json.loads(line)["schema"] == "factory.agent-progress/1"
        for line in proc.stderr.splitlines()
    )
    return proc.returncode, json.loads(proc.stdout)


def verified(layout: Layout) -> None:
    proc = run_factory(["receipt", "verify", str(layout.receipt)])
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["candidate"]["still_matches"] is True


def rehearsal_log(layout: Layout, r: dict[str, object]) -> dict[str, object]:
    """The scripted model's request log, bound by the receipt (SPEC P-5)."""
    ref = r["route_evidence"]
    assert isinstance(ref, dict) and ref["role"] == "rehearsal-log"
    log = json.loads((layout.receipt.parent / str(ref["path"])).read_bytes())
    assert isinstance(log, dict) and log["schema"] == "factory.rehearsal-log/1"
    return log


def test_rehearsal_approve(layout: Layout, tmp_path: Path) -> None:
    rc, r = agent(
        layout,
        scenario(
            tmp_path,
            worker("greeting.py", GREET),
            reviewer("APPROVE", "cat greeting.py", "echo second-shell-call"),
        ),
    )
    assert rc == 0 and r["status"] == "completed" and r["route"] == "rehearsal"
    assert "rehearsal" in str(r["execution"]) and len(r["phases"]) == 2  # type: ignore[arg-type]
    assert (layout.wt / "greeting.py").read_text() == GREET  # the edit went through Claude Code
    log = rehearsal_log(layout, r)
    assert log["problems"] == []
    served = [(q["invocation"], q["turn"]) for q in log["requests"] if q["outcome"] == "scripted"]  # type: ignore[attr-defined]
    assert served == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]  # both reviewer shell calls ran
    verified(layout)


def test_rehearsal_script_left_unconsumed_fails_instead_of_passing(
    layout: Layout, tmp_path: Path
) -> None:
    # The reviewer approves at once, so the scripted repair and final review never run.
    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("APPROVE"),
        worker("test_greeting.py", TEST, role="repair"),
        reviewer("APPROVE"),
    )
    rc, r = agent(layout, path)
    assert rc == 4 and r["status"] == "failed"
    assert r["error"]["code"] == "rehearsal-scenario-unconsumed"  # type: ignore[index]
    assert len(rehearsal_log(layout, r)["problems"]) == 2  # type: ignore[arg-type]
    verified(layout)  # a consistent record of a failed run


def test_rehearsal_repair_then_approve(layout: Layout, tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("REQUEST_CHANGES"),
        worker("test_greeting.py", TEST, role="repair"),
        reviewer("APPROVE", "cat greeting.py test_greeting.py"),
    )
    rc, r = agent(layout, path)
    assert rc == 0 and r["status"] == "completed"
    phases = [p["phase"] for p in r["phases"]]  # type: ignore[attr-defined]
    assert phases == ["worker", "initial_review", "repair", "final_review"]
    verified(layout)


def test_rehearsal_repair_then_reject_exits_3(layout: Layout, tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("REQUEST_CHANGES"),
        worker("test_greeting.py", TEST, role="repair"),
        reviewer("REQUEST_CHANGES"),
    )
    rc, r = agent(layout, path)
    assert rc == 3 and r["status"] == "rejected" and r["error"] is None
    verified(layout)


def test_rehearsal_reviewer_write_is_blocked_by_the_sandbox(layout: Layout, tmp_path: Path) -> None:
    before = (layout.wt / "ignored.log").read_bytes()
    path = scenario(
        tmp_path,
        worker("greeting.py", GREET),
        reviewer("APPROVE", "echo tampered > ignored.log"),
    )
    rc, r = agent(layout, path)
    # The write never happened (read-only sandbox), so the review stands.
    assert (layout.wt / "ignored.log").read_bytes() == before
    assert rc == 0 and r["status"] == "completed", r["error"]
    verified(layout)

"""Agent receipts built by hand with fixed values, for the rendering tests
(``receipt show``, its terminal and HTML forms)."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console

from factory.agent.receipt import (
    DECLARED_RESIDUALS,
    AgentReceipt,
    BaseRecord,
    Binding,
    CandidateBody,
    CandidateRecord,
    Candidates,
    ChangedPath,
    EvidenceRef,
    GitSettings,
    PhaseRecord,
    Timings,
    receipt_bytes,
)
from factory.agent.receipt_facts import ReceiptFacts
from factory.agent.receipt_show import parse_receipt, render_facts
from factory.provider_api import REHEARSAL_EXECUTION

HEX = "0123456789abcdef" * 4


def evidence_ref(role: str, n: int) -> EvidenceRef:
    return EvidenceRef(
        role=role,
        path=f"r.json.evidence/{role}-{HEX}",
        bytes=n,
        sha256=HEX,
        media_type="text/plain; charset=utf-8",
    )


def candidate_record(files: list[ChangedPath], tree: str) -> CandidateRecord:
    body = CandidateBody(
        base_commit="c" * 40,
        base_tree="b" * 40,
        candidate_tree=tree * 40,
        status_bytes=80,
        status_sha256=HEX,
        patch_bytes=1234,
        patch_sha256=HEX,
        files=files,
    )
    return CandidateRecord(
        identity=body.identity(),
        body=body,
        status_evidence=evidence_ref("status", 80),
        patch_evidence=evidence_ref("patch", 1234),
        conversions_differ=False,
        collisions=[],
    )


def phase_record(phase: str, role: str, outcome: str, verdict: str | None, ms: int) -> PhaseRecord:
    reviewer = role == "reviewer"
    return PhaseRecord.model_validate(
        {
            "phase": phase,
            "role": role,
            "profile": "codex" if reviewer else "claude",
            "cli_version": "0.171.0" if reviewer else "2.1.332",
            "requested_authority": "sandbox-read-only" if reviewer else "host-user-process",
            "argv_shape": ["exec", "--sandbox", "read-only"],
            "process_exit_code": 0,
            "observed_postcondition": "head-index-tree-control-unchanged",
            "outcome": outcome,
            "verdict": verdict,
            "reviewed_identity": "sha256:" + HEX if reviewer else None,
            "binding": Binding(
                worktree_tree="sha256:" + HEX, git_control="sha256:" + HEX, entries=9
            )
            if reviewer
            else None,
            "evidence": [evidence_ref(f"{phase}-stdout", 321), evidence_ref(f"{phase}-stderr", 0)],
            "child_env_names": ["HOME", "PATH"],
            "started_at": "2026-11-30T10:00:00.000Z",
            "ended_at": "2026-11-30T10:00:01.500Z",
            "duration_ms": ms,
        }
    )


def make_receipt(**changes: Any) -> AgentReceipt:
    files = [
        ChangedPath(path="src/calc.py", state="modified", mode="100644", bytes=420, sha256=HEX),
        ChangedPath(
            path="tests/test_calc.py", state="added", mode="100644", bytes=2048, sha256=HEX
        ),
        ChangedPath(path="old.txt", state="deleted", mode="000000", bytes=None, sha256=None),
    ]
    receipt = AgentReceipt(
        status="completed",
        exit_code=0,
        execution=REHEARSAL_EXECUTION,
        route="rehearsal",
        factory_version="0.1.0",
        task="Fix the off-by-one in calc.add",
        worktree="/tmp/demo/wt",
        evidence_dir="/tmp/demo/r.json.evidence",
        timeout_ms=600000,
        base=BaseRecord(
            commit="c" * 40,
            tree="b" * 40,
            index_tree="b" * 40,
            branch="refs/heads/work",
            git_settings=GitSettings(autocrlf=None, eol=None, filemode="true", symlinks=None),
            gitattributes=[],
            entry_divergence=None,
        ),
        phases=[
            phase_record("worker", "worker", "ok", None, 1500),
            phase_record("initial_review", "reviewer", "REQUEST_CHANGES", "REQUEST_CHANGES", 61500),
            phase_record("repair", "repair", "ok", None, 900),
            phase_record("final_review", "reviewer", "APPROVE", "APPROVE", 2000),
        ],
        candidate=Candidates(
            initial=candidate_record(files[:1], "d"), repaired=candidate_record(files, "e")
        ),
        verdict="APPROVE",
        error=None,
        residuals=list(DECLARED_RESIDUALS),
        timings=Timings(
            started_at="2026-11-30T10:00:00.000Z",
            ended_at="2026-11-30T10:01:06.000Z",
            duration_ms=66000,
        ),
    )
    return linked(receipt.model_copy(update=changes)).closed()


def linked(receipt: AgentReceipt) -> AgentReceipt:
    """Each review names the candidate it judged (``receipt verify`` checks it)."""
    judged = {
        "initial_review": receipt.candidate.initial,
        "final_review": receipt.candidate.repaired,
    }
    phases = [
        p.model_copy(update={"reviewed_identity": c.identity})
        if (c := judged.get(p.phase)) is not None
        else p
        for p in receipt.phases
    ]
    return receipt.model_copy(update={"phases": phases})


def receipt_json(receipt: AgentReceipt) -> dict[str, Any]:
    value = json.loads(receipt_bytes(receipt))
    assert isinstance(value, dict)
    return value


OK_REPORT: dict[str, Any] = {"ok": True, "evidence": [], "candidate": {"still_matches": True}}


def facts(value: dict[str, Any], *, failed: list[str] | None = None, **kw: Any) -> ReceiptFacts:
    report = OK_REPORT if failed is None else {**OK_REPORT, "ok": False}
    return ReceiptFacts(
        receipt=parse_receipt(value),
        verified=failed is None,
        failed=failed or [],
        report=report,
        **kw,
    )


def show(
    value: dict[str, Any] | ReceiptFacts, *, width: int = 200, color: bool = False, **kw: Any
) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
    )
    render_facts(value if isinstance(value, ReceiptFacts) else facts(value), console, **kw)
    return out.getvalue()

"""The built-in acquisition providers against real files, real git, real processes, a real
agent receipt (fake provider profiles) and recorded review-gate results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from factory.gate.acquire import acquire, default_providers
from factory.gate.providers import command, files, git, receipt, review_gate
from factory.gate.scenario import load_bytes
from tests.agent.fakes import Step, write
from tests.agent.helpers import run as run_agent
from tests.gate.helpers import condition, new_gate, scenario_doc
from tests.support.git import add_linked_worktree, init_repo
from tests.support.git import git as sh_git
from tests.support.layout import make_layout


async def test_file_digest_and_pointer(tmp_path: Path) -> None:
    path = tmp_path / "cov.json"
    path.write_text('{"total": {"pct": 91.5}}')
    seen = await files.acquire({"path": str(path), "pointer": "/total/pct"})
    assert seen.failure is None and seen.document["bytes"] == path.stat().st_size
    assert str(seen.document["value"]) == "91.5" and seen.scope_kind == "file"
    missing_key = await files.acquire({"path": str(path), "pointer": "/total/none"})
    assert "value" not in missing_key.document
    assert (
        await files.acquire({"path": str(tmp_path / "nope")})
    ).failure.code == "provider-unavailable"  # type: ignore[union-attr]
    (tmp_path / "link").symlink_to(path)
    assert (
        await files.acquire({"path": str(tmp_path / "link")})
    ).failure.code == "provider-refused"  # type: ignore[union-attr]
    path.write_text("{broken")
    assert (
        await files.acquire({"path": str(path), "pointer": ""})
    ).failure.code == "observation-unparsable"  # type: ignore[union-attr]


async def test_git_tree_and_ancestry(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    first = sh_git(repo, "rev-parse", "HEAD").strip()
    (repo / "b.txt").write_text("b\n")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "-qm", "two")
    seen = await git.acquire({"repo": str(repo), "ref": first, "ancestor_of": "HEAD"})
    assert seen.document["commit"] == first and seen.document["is_ancestor"] is True
    assert seen.document["tree"] == sh_git(repo, "rev-parse", f"{first}^{{tree}}").strip()
    back = await git.acquire({"repo": str(repo), "ref": "HEAD", "ancestor_of": first})
    assert back.document["is_ancestor"] is False
    bad = await git.acquire({"repo": str(repo), "ref": "--output=/tmp/x"})
    assert bad.failure is not None and bad.failure.code == "provider-unavailable"


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo", {"README.md": "x\n"})
    return add_linked_worktree(repo, tmp_path / "wt")


async def test_command_runs_supervised_and_measures_the_tree(worktree: Path) -> None:
    ok = await command.acquire(
        {"argv": [sys.executable, "-c", "print('hi')"], "cwd": str(worktree)}
    )
    assert ok.failure is None and ok.document["exit_code"] == 0 and not ok.mutated
    assert ok.scope_kind == "tree" and ok.scope_value == ok.document["tree_before"]
    assert dict(ok.artefacts)["stdout"] == b"hi\n"
    failing = await command.acquire(
        {"argv": [sys.executable, "-c", "raise SystemExit(3)"], "cwd": str(worktree)}
    )
    assert failing.document["exit_code"] == 3
    changer = [sys.executable, "-c", "open('new.txt','w').write('x')"]
    mutated = await command.acquire({"argv": changer, "cwd": str(worktree)})
    assert mutated.mutated and mutated.document["tree_before"] != mutated.document["tree_after"]


async def test_command_timeout_and_missing_program_are_operational_failures(worktree: Path) -> None:
    slow = await command.acquire(
        {
            "argv": [sys.executable, "-c", "import time; time.sleep(30)"],
            "cwd": str(worktree),
            "timeout_s": 1,
        }
    )
    assert slow.failure is not None and slow.failure.code == "provider-timeout"
    absent = await command.acquire({"argv": ["/nonexistent/prog"], "cwd": str(worktree)})
    assert absent.failure is not None and absent.failure.code == "provider-unavailable"
    nowhere = await command.acquire({"argv": ["true"], "cwd": str(worktree.parent)})
    assert nowhere.failure is not None and nowhere.failure.code == "provider-refused"


async def test_agent_receipt_verified_forged_and_missing(tmp_path: Path) -> None:
    layout = make_layout(tmp_path)
    await run_agent(
        layout,
        [Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n"))],
        [Step(verdict="APPROVE")],
    )
    seen = await receipt.acquire({"receipt": str(layout.receipt)})
    assert seen.failure is None
    assert (seen.document["verdict"], seen.document["status"]) == ("APPROVE", "completed")
    assert seen.document["route"] == "subscription" and seen.scope_kind == "tree"
    assert seen.scope_value == seen.document["candidate_tree"]
    assert seen.document["still_matches"] is True and not seen.mutated
    (layout.wt / "later.txt").write_text("the worktree moved on\n")
    moved = await receipt.acquire({"receipt": str(layout.receipt)})
    assert moved.failure is None and moved.document["still_matches"] is False
    doc = json.loads(layout.receipt.read_bytes())
    doc["verdict"] = "REQUEST_CHANGES"
    layout.receipt.write_bytes(json.dumps(doc).encode())
    forged = await receipt.acquire({"receipt": str(layout.receipt)})
    assert forged.failure is not None and (forged.failure.family, forged.failure.code) == (
        "integrity",
        "witness-forged",
    )
    gone = await receipt.acquire({"receipt": str(layout.out / "none.json")})
    assert gone.failure is not None and gone.failure.code == "provider-unavailable"


ALLOW = {
    "schema": "factory.review-gate-result/1",
    "result": "allow",
    "allowed": True,
    "action": None,
    "reason": None,
    "denial": None,
    "context": {"gate": "pre-pr"},
}
DENY = {
    **ALLOW,
    "result": "scope-changed",
    "allowed": False,
    "action": "factory review recover",
    "reason": "the candidate changed",
    "denial": {"stage": "validate", "code": "scope-changed"},
}


def recorded(stdout: bytes, code: int = 0) -> review_gate.Runner:
    async def runner(gate: str, repo: Path) -> tuple[int, bytes]:
        assert gate in review_gate.RESULTS or gate in (
            "pre-commit",
            "pre-push",
            "pre-pr",
            "release",
        )
        return code, stdout

    return runner


@pytest.mark.parametrize(
    ("stdout", "failure"),
    [
        (json.dumps(ALLOW).encode(), None),
        (json.dumps(DENY).encode(), None),
        (json.dumps({**ALLOW, "allowed": False}).encode(), "observation-unparsable"),
        (json.dumps({**ALLOW, "extra": 1}).encode(), "observation-unparsable"),
        (json.dumps({**DENY, "denial": {"stage": "x"}}).encode(), "observation-unparsable"),
        (json.dumps({**ALLOW, "result": "maybe"}).encode(), "observation-unparsable"),
        (b"usage: factory review ...", "observation-unparsable"),
    ],
)
async def test_review_gate_against_recorded_results(
    tmp_path: Path, stdout: bytes, failure: str | None
) -> None:
    seen = await review_gate.make(recorded(stdout))({"gate": "pre-pr", "repo": str(tmp_path)})
    assert (None if seen.failure is None else seen.failure.code) == failure
    if failure is None:
        assert seen.document["allowed"] is (seen.document["result"] == "allow")


async def test_acquire_records_select_absence_failures_and_artefacts(tmp_path: Path) -> None:
    data = tmp_path / "report.json"
    data.write_text('{"failed": 0}')
    doc = scenario_doc(
        [
            condition(
                "failed",
                acquire={
                    "provider": "file",
                    "path": "${dir}/report.json",
                    "pointer": "/failed",
                    "select": "/value",
                },
            ),
            condition(
                "skipped",
                predicate="not_exists",
                operand=...,
                universe="document",
                acquire={
                    "provider": "file",
                    "path": "${dir}/report.json",
                    "pointer": "/skipped",
                    "select": "/value",
                },
            ),
            condition(
                "review",
                "boolean",
                "equals",
                True,
                acquire={
                    "provider": "review-gate",
                    "gate": "pre-pr",
                    "repo": "${dir}",
                    "select": "/allowed",
                },
            ),
        ],
        params=["dir"],
    )
    sc = load_bytes(json.dumps(doc).encode(), "json")
    gate = new_gate(tmp_path)
    run, _ = gate.start("r1", sc, {"dir": str(tmp_path)})
    providers = default_providers(recorded(json.dumps(DENY).encode()))
    records = await acquire(gate, run, providers=providers)
    assert [r.ingress for r in records] == ["acquired"] * 3
    assert all(r.producer.startswith("factory:") and r.actor == "factory" for r in records)
    result = gate.derive(run).record
    by_id: dict[str, Any] = {c["condition"]: c for c in result["conditions"]}
    assert by_id["failed"]["result"] == "true"
    assert (by_id["skipped"]["resolution"], by_id["skipped"]["result"]) == (
        "observed-absent",
        "true",
    )
    assert by_id["review"]["result"] == "false"


async def test_the_builtin_receipt_scenario_end_to_end(tmp_path: Path) -> None:
    from factory.gate.scenario import load_builtin

    layout = make_layout(tmp_path)

    await run_agent(
        layout,
        [Step(effect=write("src/app.py", "def add(a, b):\n    return a + b\n"))],
        [Step(verdict="APPROVE")],
    )
    tree = json.loads(layout.receipt.read_bytes())["candidate"]["initial"]["body"]["candidate_tree"]
    gate = new_gate(tmp_path)
    sc = load_builtin("receipt-approved")
    for run_id, claimed, complete in (("right", tree, True), ("wrong", "0" * 40, False)):
        run, _ = gate.start(run_id, sc, {"receipt": str(layout.receipt), "candidate_tree": claimed})
        await acquire(gate, run)
        cand = gate.derive(run)
        assert cand.delta["scenario_complete"] is complete
        if not complete:
            reasons = {
                r for c in cand.record["conditions"] for x in c["rejected"] for r in x["reasons"]
            }
            assert reasons == {"scope-mismatch"}

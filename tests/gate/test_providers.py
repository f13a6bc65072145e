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


CONTEXT: dict[str, Any] = {
    "gate": "pre-pr", "repository": "/r", "lineage_id": None, "generation": None,
    "store_revision": None, "state": None, "receipt": None, "live": None, "boundary": None,
    "artifacts": [], "considered": [], "corrupt": [], "final_recheck": "not-needed",
    "model_calls": 0, "next": [],
}  # fmt: skip
ALLOW = {
    "schema": "factory.review-gate-result/1",
    "result": "allow",
    "allowed": True,
    "action": "continue",
    "reason": "allowed",
    "denial": None,
    "context": CONTEXT,
}
DENY = {
    **ALLOW,
    "result": "scope-changed",
    "allowed": False,
    "action": "create-new-lineage",
    "reason": "the candidate changed",
    "denial": {"stage": "validate", "code": "scope-changed"},
}


def recorded(doc: dict[str, Any]) -> review_gate.Runner:
    """A runner answering the typed result of ``doc`` (what the review service returns)."""
    from factory.review.gates.result import GateResult

    async def runner(gate: str, repo: Path) -> GateResult:
        assert gate in review_gate.GATES
        return GateResult.model_validate_json(json.dumps(doc))

    return runner


@pytest.mark.parametrize("doc", [ALLOW, DENY])
async def test_review_gate_against_typed_results(tmp_path: Path, doc: dict[str, Any]) -> None:
    seen = await review_gate.make(recorded(doc))({"gate": "pre-pr", "repo": str(tmp_path)})
    assert seen.failure is None and seen.document == doc
    assert seen.document["allowed"] is (seen.document["result"] == "allow")
    assert seen.scope_kind == "repository"
    ((role, data),) = seen.artefacts
    assert role == "review-gate-result" and json.loads(data) == doc


@pytest.mark.parametrize(
    "bad",
    [
        {**ALLOW, "allowed": "yes"},
        {**ALLOW, "extra": 1},
        {**DENY, "denial": {"stage": "x"}},
        {**ALLOW, "result": "maybe"},
        {**ALLOW, "action": "keep-going"},
    ],
)
def test_the_result_model_refuses_what_the_provider_once_checked_by_hand(
    bad: dict[str, Any],
) -> None:
    """The hand-written validator is gone: the typed result is the contract."""
    from pydantic import ValidationError

    from factory.review.gates.result import GateResult

    with pytest.raises(ValidationError):
        GateResult.model_validate_json(json.dumps(bad))


async def test_review_gate_typed_refusal_and_unknown_gate(tmp_path: Path) -> None:
    from factory.review.gate_errors import GATE_USAGE

    async def refusing(gate: str, repo: Path) -> Any:
        raise GATE_USAGE("the store is corrupt")

    seen = await review_gate.make(refusing)({"gate": "pre-pr", "repo": str(tmp_path)})
    assert seen.failure is not None and seen.failure.code == "provider-refused"
    assert "the store is corrupt" in seen.failure.message
    odd = await review_gate.make(recorded(ALLOW))({"gate": "pre-land", "repo": str(tmp_path)})
    assert odd.failure is not None and odd.failure.code == "provider-refused"


async def test_review_gate_default_runs_the_review_service_in_process(tmp_path: Path) -> None:
    """The real service on a real repository without a review: a typed denial."""
    repo = init_repo(tmp_path / "repo")
    seen = await review_gate.make()({"gate": "pre-pr", "repo": str(repo)})
    assert seen.failure is None or seen.failure.code == "provider-refused"
    if seen.failure is None:
        assert seen.document["allowed"] is False and seen.document["denial"] is not None


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
    providers = default_providers(recorded(DENY))
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

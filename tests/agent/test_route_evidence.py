"""The route's own record is evidence bound by the receipt (SPEC P-5, A-7), and a route
that saw the run leave its contract fails the run instead of letting it pass silently."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from factory.agent.evidence import resolve_evidence_path
from factory.agent.receipt import AgentReceipt
from factory.agent.run import AgentDeps, RouteReport, run_agent
from factory.agent.verify import verify_json as verify
from factory.errors import Code
from factory.provider_api import SubscriptionRoute
from factory.rehearsal import SCENARIO_UNCONSUMED
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, chain, write
from tests.agent.helpers import request
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
LOG = b'{"schema":"factory.rehearsal-log/1","requests":[]}'
UNCONSUMED = (SCENARIO_UNCONSUMED, "the CLIs did not follow the rehearsal scenario")


async def _run(
    layout: Layout,
    hook: Callable[[], RouteReport | None] | None,
    agent: list[Step] | None = None,
    reviewer: list[Step] | None = None,
) -> tuple[int, AgentReceipt, list[int]]:
    calls: list[int] = []

    def counted() -> RouteReport | None:
        calls.append(1)
        assert hook is not None
        return hook()

    deps = AgentDeps(
        agent=FakeAgent(agent if agent is not None else [Step(effect=FIX)]),
        reviewer=FakeReviewer(reviewer if reviewer is not None else [Step()]),
        route=SubscriptionRoute(),
        route_report=counted if hook is not None else None,
    )
    outcome = await run_agent(request(layout), deps)
    assert outcome.data == layout.receipt.read_bytes()
    return outcome.exit_code, outcome.receipt, calls


async def test_the_route_log_is_stored_and_bound_and_verify_rehashes_it(layout: Layout) -> None:
    rc, r, calls = await _run(layout, lambda: RouteReport("rehearsal-log", LOG, "application/json"))
    assert (rc, r.status, r.error, calls) == (0, "completed", None, [1])
    ref = r.route_evidence
    assert ref is not None and ref.role == "rehearsal-log"
    assert ref.media_type == "application/json"
    assert ref.policy == "local-sensitive-content-addressed"
    path = resolve_evidence_path(ref, layout.receipt)
    assert path.read_bytes() == LOG and path.name == f"rehearsal-log-{ref.sha256}"
    assert path.stat().st_mode & 0o777 == 0o600
    result = verify(layout.receipt)
    assert result["ok"] is True
    assert any(e["role"] == "rehearsal-log" and e["ok"] for e in result["evidence"])

    # one flipped byte in the route log is caught like any other evidence file
    path.chmod(0o600)
    path.write_bytes(bytes([LOG[0] ^ 1]) + LOG[1:])
    again = verify(layout.receipt)
    assert again["ok"] is False
    assert [e["problem"] for e in again["evidence"] if e["role"] == "rehearsal-log"] == [
        "digest-mismatch"
    ]


async def test_an_unconsumed_script_fails_an_approved_run(layout: Layout) -> None:
    rc, r, _ = await _run(
        layout, lambda: RouteReport("rehearsal-log", LOG, "application/json", UNCONSUMED)
    )
    assert (rc, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "rehearsal-scenario-unconsumed"
    assert r.route_evidence is not None  # the log that shows why is still bound
    assert verify(layout.receipt)["ok"] is True  # a consistent record of a failed run


async def test_an_unconsumed_script_fails_a_rejected_run(layout: Layout) -> None:
    rc, r, _ = await _run(
        layout,
        lambda: RouteReport("rehearsal-log", LOG, "application/json", UNCONSUMED),
        agent=[Step(effect=FIX), Step(effect=write("t.py", "x\n"))],
        reviewer=[Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")],
    )
    assert (rc, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "rehearsal-scenario-unconsumed"


async def test_an_earlier_failure_keeps_its_own_code_and_the_log_is_still_bound(
    layout: Layout,
) -> None:
    rc, r, _ = await _run(
        layout,
        lambda: RouteReport("rehearsal-log", LOG, "application/json", UNCONSUMED),
        agent=[Step()],  # the worker changes nothing
    )
    assert (rc, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "no-candidate-change"
    assert r.route_evidence is not None


async def test_a_raising_route_hook_still_ends_in_a_terminal_failed_receipt(
    layout: Layout,
) -> None:
    def broken() -> RouteReport:
        raise RuntimeError("boom")

    rc, r, calls = await _run(layout, broken)
    assert (rc, r.status, calls) == (4, "failed", [1])
    assert r.error is not None and r.error.code == "route-evidence-failed"
    assert r.route_evidence is None


async def test_without_a_route_hook_the_receipt_has_no_route_evidence_key(
    layout: Layout,
) -> None:
    # Schema compatibility: the optional field is left out when absent, so receipts written
    # before it existed keep their exact bytes and revision.
    rc, r, _ = await _run(layout, None)
    assert rc == 0 and r.route_evidence is None
    assert "route_evidence" not in json.loads(layout.receipt.read_bytes())
    assert verify(layout.receipt)["ok"] is True


@pytest.mark.parametrize("problem", [None, UNCONSUMED])
async def test_the_hook_is_called_once_even_when_interrupted(
    layout: Layout, problem: tuple[Code[Any], str] | None
) -> None:
    import trio

    calls: list[int] = []

    def hook() -> RouteReport:
        calls.append(1)
        return RouteReport("rehearsal-log", LOG, "application/json", problem)

    # Interrupted once the worker has made its edit (a readiness signal, not a 0.5 s
    # guess that a loaded machine turns into an interruption during admission).
    with trio.CancelScope() as scope:
        deps = AgentDeps(
            agent=FakeAgent([Step(effect=chain(FIX, lambda _: scope.cancel()), hang=True)]),
            reviewer=FakeReviewer([]),
            route=SubscriptionRoute(),
            route_report=hook,
        )
        await run_agent(request(layout), deps)
    r = AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))
    assert (r.status, r.exit_code, calls) == ("interrupted", 130, [1])
    assert r.error is not None and r.error.code == "interrupted"  # never overwritten
    assert r.route_evidence is not None
    assert Path(resolve_evidence_path(r.route_evidence, layout.receipt)).read_bytes() == LOG


async def test_the_cli_wires_the_rehearsal_log_and_its_consumption(tmp_path: Path) -> None:
    """``agent_cycle.rehearsal_report`` over a real scripted server (HTTP, no CLIs)."""
    from factory.cli.agent_cycle import rehearsal_report
    from factory.rehearsal import open_rehearsal, parse_scenario
    from tests.rehearsal.http_client import call, claude_body

    script = parse_scenario(
        json.dumps(
            {
                "schema": "factory.rehearsal-scenario/1",
                "invocations": [{"role": "worker", "final_message": "done"}],
            }
        ).encode()
    )
    async with open_rehearsal(script, tmp_path / "route") as session:
        before = rehearsal_report(session)
        status, _ = await call(
            session, "POST", "/v1/messages", claude_body(0), {"x-claude-code-session-id": "s1"}
        )
        after = rehearsal_report(session)
    assert before.problem is not None and before.problem[0] is SCENARIO_UNCONSUMED
    assert "/" not in before.problem[1]  # no paths in the receipt's error message
    assert status == 200 and after.problem is None  # twin: the script was followed
    log = json.loads(after.data)
    assert (after.role, after.media_type) == ("rehearsal-log", "application/json")
    assert log["schema"] == "factory.rehearsal-log/1" and log["problems"] == []
    assert [r["outcome"] for r in log["requests"]] == ["scripted"]
    assert session.route.api_key.encode() not in after.data

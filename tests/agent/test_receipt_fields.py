"""Receipt fields users ask for, and receipts that verify as what they are (issue 8 §6)."""

from __future__ import annotations

import json

import trio

from factory.agent.receipt import AgentReceipt, receipt_bytes
from factory.agent.verify import verify
from tests.agent.conftest import Layout
from tests.agent.fakes import Step, chain, write
from tests.agent.helpers import run

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


def on_disk(layout: Layout) -> AgentReceipt:
    return AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))


async def test_child_env_names_are_recorded_sorted_per_phase(layout: Layout) -> None:
    names = ("PATH", "HOME", "LANG")
    ran = await run(layout, [Step(effect=FIX, env_names=names)], [Step(env_names=names[:2])])
    phases = ran.outcome.receipt.phases
    assert [p.child_env_names for p in phases] == [["HOME", "LANG", "PATH"], ["HOME", "PATH"]]


async def test_twin_a_profile_that_reports_no_names_records_null(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step()])
    assert [p.child_env_names for p in ran.outcome.receipt.phases] == [None, None]


async def test_case_fold_and_nfc_collisions_are_recorded(layout: Layout) -> None:
    clash = chain(FIX, write("readme.md", "lower\n"), write("caf\u00e9.txt", "1"))
    clash = chain(clash, write("cafe\u0301.txt", "2"))
    ran = await run(layout, [Step(effect=clash)], [Step()])
    cand = ran.outcome.receipt.final_candidate()
    assert cand is not None
    assert [(c.kind, c.paths) for c in cand.collisions] == [
        ("case-fold", ["README.md", "readme.md"]),
        ("nfc", ["cafe\u0301.txt", "caf\u00e9.txt"]),
    ]
    assert verify(layout.receipt)["ok"] is True


async def test_twin_no_collision_records_an_empty_list(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step()])
    cand = ran.outcome.receipt.final_candidate()
    assert cand is not None and cand.collisions == []


async def interrupted_during_the_repair(layout: Layout) -> None:
    started = trio.Event()
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def go() -> None:
                editing = chain(write("tests/t.py", "x\n"), lambda _: started.set())
                await run(
                    layout,
                    [Step(effect=FIX), Step(effect=editing, hang=True)],
                    [Step(verdict="REQUEST_CHANGES")],
                )

            nursery.start_soon(go)
            await started.wait()
            scope.cancel()


async def test_an_interrupted_receipt_verifies_as_what_it_is(layout: Layout) -> None:
    await interrupted_during_the_repair(layout)
    r = on_disk(layout)
    assert (r.status, r.exit_code, r.phases[-1].phase) == ("interrupted", 130, "repair")
    report = verify(layout.receipt)
    assert report["ok"] is True, report
    # The repair was editing: the worktree no longer holds the last bound candidate, and
    # the report says so without holding it against an interrupted receipt.
    assert report["candidate"]["still_matches"] is False
    assert report["candidate"]["gating"] is False


async def test_twin_the_same_receipt_claiming_completion_fails(layout: Layout) -> None:
    await interrupted_during_the_repair(layout)
    r = on_disk(layout)
    forged = r.model_copy(update={"status": "completed", "exit_code": 0, "error": None})
    forged = forged.model_copy(update={"verdict": "REQUEST_CHANGES"}).closed()
    layout.receipt.write_bytes(receipt_bytes(forged))
    report = verify(layout.receipt)
    assert report["ok"] is False and report["candidate"]["gating"] is True


def reclosed_with(layout: Layout, identity: str) -> None:
    r = on_disk(layout)
    cand = r.candidate.initial
    assert cand is not None
    phases = [
        p.model_copy(update={"reviewed_identity": identity}) if p.reviewed_identity else p
        for p in r.phases
    ]
    forged = r.model_copy(
        update={
            "candidate": r.candidate.model_copy(
                update={"initial": cand.model_copy(update={"identity": identity})}
            ),
            "phases": phases,
        }
    ).closed()
    layout.receipt.write_bytes(receipt_bytes(forged))


async def test_verify_checks_each_identity_against_its_own_body(layout: Layout) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    reclosed_with(layout, "sha256:" + "0" * 64)  # revision recomputed: only this is wrong
    report = verify(layout.receipt)
    assert report["revision"]["ok"] is True
    assert "candidate-identity-does-not-match-body" in report["consistency_problems"]
    assert report["ok"] is False


async def test_twin_the_true_identity_verifies(layout: Layout) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    cand = on_disk(layout).candidate.initial
    assert cand is not None
    reclosed_with(layout, cand.body.identity())  # re-closed, but consistent
    assert verify(layout.receipt)["ok"] is True

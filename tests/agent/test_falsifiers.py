"""SPEC §4 falsifiers, one test each: every test fails if its falsifier ever holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from factory.agent.evidence import resolve_evidence_path
from factory.agent.receipt import AgentReceipt
from factory.agent.verify import all_evidence, check_evidence
from factory.provider_api import ProviderResult
from tests.agent.admission_checks import refused
from tests.agent.fakes import FakeAgent, Step, write
from tests.agent.helpers import request, run
from tests.support.git import git, init_repo
from tests.support.layout import Layout

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
TEST = write("tests/test_app.py", "def test_add():\n    assert 1 + 2 == 3\n")


def receipt(layout: Layout) -> AgentReceipt:
    return AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))


@pytest.mark.parametrize("checkout", ["primary", "submodule-primary", "dirty"])
async def test_f01_primary_submodule_or_dirty_checkout_never_runs(
    layout: Layout, tmp_path: Path, checkout: str
) -> None:
    if checkout == "primary":
        await refused(request(layout, worktree=layout.repo), "linked-worktree-required")
    elif checkout == "submodule-primary":
        sub = init_repo(tmp_path / "s")
        sup = init_repo(tmp_path / "p")
        git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "m")
        await refused(request(layout, worktree=sup / "m"), "linked-worktree-required")
    else:
        (layout.wt / "untracked.txt").write_text("x")
        await refused(request(layout), "worktree-not-clean")


@pytest.mark.parametrize("what", ["receipt", "evidence"])
async def test_f02_physical_alias_never_places_output_inside_the_candidate(
    layout: Layout, tmp_path: Path, what: str
) -> None:
    alias = tmp_path / "elsewhere"
    alias.symlink_to(layout.wt / "src")
    if what == "receipt":
        await refused(request(layout, receipt=alias / "r.json"), "receipt-inside-worktree")
    else:
        await refused(request(layout, evidence=alias / "ev"), "evidence-inside-worktree")


@pytest.mark.parametrize(
    ("agent", "reviewer", "code"),
    [
        ([Step(effect=FIX)], [Step()], 0),
        ([Step(effect=FIX), Step(effect=TEST)], [Step(verdict="REQUEST_CHANGES"), Step()], 0),
        (
            [Step(effect=FIX), Step(effect=TEST)],
            [Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")],
            3,
        ),
        ([Step()], [], 4),
        ([Step(effect=FIX), Step()], [Step(verdict="REQUEST_CHANGES")], 4),
    ],
    ids=["approve", "repair-approve", "rejected", "no-change", "repair-no-change"],
)
async def test_f03_head_and_index_equal_their_entry_values_at_the_end(
    layout: Layout, agent: list[Step], reviewer: list[Step], code: int
) -> None:
    head, index = layout.head(), layout.index_bytes()
    ran = await run(layout, agent, reviewer)
    assert ran.outcome.exit_code == code
    assert layout.head() == head and layout.index_bytes() == index


async def test_f04_reviewer_mutation_of_an_ignored_file_is_never_accepted(layout: Layout) -> None:
    ran = await run(layout, [Step(effect=FIX)], [Step(effect=write("ignored.log", "changed"))])
    assert ran.outcome.exit_code == 4 and receipt(layout).status == "failed"
    assert receipt(layout).error.code == "reviewer-mutation"  # type: ignore[union-attr]


async def test_f05_a_rejection_never_exits_as_success(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=TEST)],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="REQUEST_CHANGES")],
    )
    assert ran.outcome.exit_code == 3
    assert receipt(layout).status == "rejected" and receipt(layout).exit_code == 3


def test_f06_a_caller_override_never_reaches_a_profile(layout: Layout, tmp_path: Path) -> None:
    # The run hands profiles only the route it built; the profiles' own env allow-list
    # (SPEC P-3) is tested with the profiles. Here: the caller's overrides do not shape it.
    dump = tmp_path / "route.txt"
    sentinel = "https://attacker.invalid/sentinel"
    env = dict(os.environ)
    for key in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env[key] = sentinel
    args = ["agent", "--worktree", str(layout.wt), "--task", "t", "--out", str(layout.receipt)]
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("fake_factory.py")),
            "route-dump",
            str(dump),
            "--",
            *args,
        ],
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    shown = dump.read_text()
    assert shown.startswith("SubscriptionRoute(") and "sentinel" not in shown
    assert sentinel.encode() not in layout.receipt.read_bytes()


class SpawnThenHang(FakeAgent):
    pid: int = 0

    async def run_agent(self, **kw: object) -> ProviderResult:
        self.calls.append(kw)  # type: ignore[arg-type]
        async with trio.open_nursery() as n:
            proc = await n.start(
                lambda task_status: trio.run_process(["sleep", "60"], task_status=task_status)
            )
            self.pid = proc.pid
        raise AssertionError("unreachable")


async def test_f07_a_terminated_child_never_keeps_running(layout: Layout) -> None:
    from factory.agent.run import AgentDeps, run_agent
    from factory.provider_api import SubscriptionRoute
    from tests.agent.fakes import FakeReviewer

    agent = SpawnThenHang([])
    deps = AgentDeps(agent=agent, reviewer=FakeReviewer([]), route=SubscriptionRoute())
    with trio.move_on_after(30) as scope:
        async with trio.open_nursery() as n:
            n.start_soon(run_agent, request(layout), deps)
            while agent.pid == 0:
                await trio.sleep(0.01)
            n.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert not Path(f"/proc/{agent.pid}").exists()
    assert receipt(layout).status == "interrupted"


async def test_f08_evidence_can_be_replayed(layout: Layout) -> None:
    await run(
        layout,
        [Step(effect=FIX), Step(effect=TEST)],
        [Step(verdict="REQUEST_CHANGES"), Step()],
    )
    r = receipt(layout)
    assert all(check_evidence(ref, layout.receipt).ok for ref in all_evidence(r))
    live_status = git(layout.wt, "status", "--porcelain=v2", "-z", "--untracked-files=all")
    repaired = r.candidate.repaired
    assert repaired is not None
    status_ev = resolve_evidence_path(repaired.status_evidence, layout.receipt).read_bytes()
    assert status_ev == live_status.encode()
    for cand in (r.candidate.initial, repaired):
        assert cand is not None
        replay = layout.out / f"replay-{cand.identity[7:19]}"
        git(layout.repo, "worktree", "add", "-q", "--detach", str(replay), cand.body.base_commit)
        patch = resolve_evidence_path(cand.patch_evidence, layout.receipt)
        git(replay, "apply", "--index", str(patch))
        assert git(replay, "write-tree").strip() == cand.body.candidate_tree


async def test_f09_one_request_changes_never_causes_two_repairs(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=TEST), Step(effect=write("more.txt"))],
        [Step(verdict="REQUEST_CHANGES"), Step(verdict="APPROVE"), Step()],
    )
    assert ran.agent_roles.count("repair") == 1 and ran.provider_calls == 4


async def test_f10_the_final_reviewer_sees_the_repaired_identity(layout: Layout) -> None:
    ran = await run(
        layout, [Step(effect=FIX), Step(effect=TEST)], [Step(verdict="REQUEST_CHANGES"), Step()]
    )
    r = receipt(layout)
    assert r.candidate.repaired is not None and r.candidate.initial is not None
    final = next(p for p in r.phases if p.phase == "final_review")
    assert final.reviewed_identity == r.candidate.repaired.identity
    assert r.candidate.repaired.identity in ran.reviewer.calls[1].prompt
    assert r.candidate.initial.identity not in ran.reviewer.calls[1].prompt


async def test_f11_a_second_rejection_never_loops(layout: Layout) -> None:
    ran = await run(
        layout,
        [Step(effect=FIX), Step(effect=TEST), Step(effect=write("a")), Step(effect=write("b"))],
        [Step(verdict="REQUEST_CHANGES")] * 4,
    )
    assert ran.outcome.exit_code == 3 and ran.provider_calls == 4


@pytest.mark.parametrize(
    "repair",
    [
        Step(),
        Step(effect=lambda wt: (TEST(wt), git(wt, "add", "-A"))),
        Step(fail_code="provider-failed"),
    ],
    ids=["no-change", "stages", "provider-failure"],
)
async def test_f12_a_repair_failure_is_never_recorded_as_a_rejection(
    layout: Layout, repair: Step
) -> None:
    ran = await run(layout, [Step(effect=FIX), repair], [Step(verdict="REQUEST_CHANGES")])
    r = receipt(layout)
    assert ran.outcome.exit_code == 4 and r.status == "failed"
    assert len(ran.reviewer.calls) == 1

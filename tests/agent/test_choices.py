"""The model choices a user may make (issue 28): ``--model``, ``--reviewer-model``,
``--max-turns`` and ``--max-budget-usd``, checked before anything runs, passed through the
closed profiles as typed values and recorded in each phase's ``argv_shape``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.choices import Choices, checked
from factory.errors import UsageError
from factory.provider_api import RehearsalRoute
from providers import claude, codex
from tests.support.cli import run_factory
from tests.support.layout import Layout

BIN = Path("/bin/x")


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_without_choices_the_argv_is_todays() -> None:
    for role, turns in (("worker", "40"), ("repair", "20")):
        argv = claude.build_argv(BIN, role)  # type: ignore[arg-type]
        assert _flag(argv, "--max-turns") == turns and _flag(argv, "--max-budget-usd") == "5"
        assert "--model" not in argv
        assert argv == claude.build_argv(BIN, role, Choices())  # type: ignore[arg-type]


def test_choices_reach_the_argv_of_each_role() -> None:
    chosen = checked("claude-sonnet-4-5", "gpt-5-codex", 12, "2.50")
    worker = claude.build_argv(BIN, "worker", chosen)
    repair = claude.build_argv(BIN, "repair", chosen)
    assert (_flag(worker, "--model"), _flag(worker, "--max-turns")) == ("claude-sonnet-4-5", "12")
    assert (_flag(repair, "--max-turns"), _flag(repair, "--max-budget-usd")) == ("6", "2.50")
    route = RehearsalRoute(base_url="http://127.0.0.1:1", api_key="k", config_root=Path("/tmp"))
    review = codex.build_argv(
        BIN, worktree=Path("/w"), schema_file=Path("/s"), verdict_file=Path("/v"),
        route=route, model=chosen.reviewer_model,
    )  # fmt: skip
    assert _flag(review, "-m") == "gpt-5-codex" and review[-1] == "-"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("-model", None, None, None), "--model"),
        (("a b", None, None, None), "--model"),
        (("x;rm", None, None, None), "--model"),
        ((None, "--oops", None, None), "--reviewer-model"),
        ((None, None, 0, None), "--max-turns"),
        ((None, None, 501, None), "--max-turns"),
        ((None, None, None, "0"), "--max-budget-usd"),
        ((None, None, None, "1e3"), "--max-budget-usd"),
        ((None, None, None, "2.505"), "--max-budget-usd"),
        ((None, None, None, "1001"), "--max-budget-usd"),
        ((None, None, None, "nan"), "--max-budget-usd"),
    ],
)
def test_a_bad_choice_is_refused_by_its_flag(args: tuple[object, ...], flag: str) -> None:
    with pytest.raises(UsageError) as caught:
        checked(*args)  # type: ignore[arg-type]
    assert caught.value.code == "choice-invalid" and flag in caught.value.fact


def test_twins_the_edges_of_each_range_are_taken() -> None:
    assert checked("gpt-5.1-codex", "o3", 1, "0.01").max_turns == 1
    assert checked(None, None, 500, "1000").max_budget_usd == "1000"


def test_the_cli_refuses_a_bad_choice_before_anything(layout: Layout) -> None:
    proc = run_factory(["agent", "--worktree", str(layout.wt), "--task", "t", "--out",
                        str(layout.receipt), "--max-turns", "0"])  # fmt: skip
    assert proc.returncode == 2 and b"factory: choice-invalid:" in proc.stderr
    assert not layout.receipt.exists()


@pytest.mark.realcli
def test_the_real_clis_run_with_the_choices_and_the_receipt_records_them(layout: Layout) -> None:
    proc = run_factory(
        ["agent", "--worktree", str(layout.wt), "--task", "fix add()", "--out",
         str(layout.receipt), "--rehearsal", "demo", "--model", "claude-sonnet-4-5",
         "--reviewer-model", "gpt-5-codex", "--max-turns", "12", "--max-budget-usd", "2.50"],
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    phases = json.loads(layout.receipt.read_bytes())["phases"]
    shapes = {p["phase"]: p["argv_shape"] for p in phases}
    assert _flag(shapes["worker"], "--model") == "claude-sonnet-4-5"
    assert _flag(shapes["worker"], "--max-turns") == "12"
    assert _flag(shapes["initial_review"], "-m") == "gpt-5-codex"


def test_a_batch_passes_the_choices_to_every_task_and_temporal_refuses_them() -> None:
    from factory.batch.child_request import AgentChildRequest, with_choices

    chosen = checked("m1", "m2", 8, "1.5")
    bare = AgentChildRequest(repo="/r", base="b" * 40, task="t", out="/o", timeout_ms=1000)
    assert with_choices(bare, chosen).choices() == chosen  # the child's request carries them
    assert bare.choices() == Choices()  # twin: nothing chosen, nothing passed

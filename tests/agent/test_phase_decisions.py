"""The run's judgements, called directly with tables (factory.agent.phases; SPEC A-3…A-6,
A-9, F-3). The end-to-end twins of these rows are in test_phases.py and test_falsifiers.py."""

from __future__ import annotations

import pytest
import trio

from factory.agent import phases
from factory.agent.faults import REVIEWER_MUTATION, REVIEWER_PROTOCOL
from factory.agent.observer import Stage
from factory.agent.receipt import VerdictName
from factory.errors import INTERNAL, ExitCode, FactoryError
from factory.provider_api import PROVIDER_NETWORK, PROVIDER_PROTOCOL, Verdict
from factory.rehearsal import SCENARIO_UNCONSUMED

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64

# role, HEAD/index unchanged, changed files, identity, initial identity → postcondition, code
EDITOR_TABLE: list[tuple[phases.Editor, bool, int, str | None, str | None, str, str | None]] = [
    ("worker", False, 3, None, None, phases.HEAD_OR_INDEX_CHANGED, "worker-git-mutation"),
    ("worker", True, 0, A, None, phases.NO_CHANGE, "no-candidate-change"),
    ("worker", True, 1, A, None, phases.CANDIDATE_DERIVED, None),
    ("repair", False, 1, B, A, phases.HEAD_OR_INDEX_CHANGED, "repair-git-mutation"),
    ("repair", True, 0, B, A, phases.REPAIR_UNCHANGED, "repair-no-change"),
    ("repair", True, 1, A, A, phases.REPAIR_UNCHANGED, "repair-no-change"),
    ("repair", True, 1, None, A, phases.REPAIR_UNCHANGED, "repair-no-change"),
    ("repair", True, 1, B, A, phases.CANDIDATE_DERIVED, None),
]


@pytest.mark.parametrize("row", EDITOR_TABLE)
def test_editor_postconditions(
    row: tuple[phases.Editor, bool, int, str | None, str | None, str, str | None],
) -> None:
    role, unchanged, files, identity, initial, postcondition, code = row
    got = phases.judge_editor(
        role,
        entry_unchanged=unchanged,
        changed_files=files,
        identity=identity,
        initial_identity=initial,
    )
    assert got.postcondition == postcondition
    assert (got.error.code if got.error else None) == code
    if got.error is not None:
        assert got.error.exit_code == ExitCode.FAILURE


APPROVE = Verdict(verdict="APPROVE", summary="ok")
CHANGES = Verdict(verdict="REQUEST_CHANGES", summary="add a test")
LGTM = Verdict(verdict="LGTM", summary="?")  # type: ignore[arg-type]

# mutated, provider failure, verdict → postcondition, code, verdict
REVIEW_TABLE: list[
    tuple[bool, FactoryError | None, Verdict | None, str, str | None, str | None]
] = [
    (True, None, APPROVE, phases.REVIEW_MUTATED, "reviewer-mutation", None),
    (True, PROVIDER_PROTOCOL("x"), None, phases.REVIEW_MUTATED, "reviewer-mutation", None),
    (False, PROVIDER_PROTOCOL("x"), None, phases.REVIEW_CLEAN, "reviewer-protocol", None),
    (False, PROVIDER_NETWORK("x"), None, phases.REVIEW_CLEAN, "provider-network", None),
    (False, None, None, phases.REVIEW_CLEAN, "reviewer-protocol", None),
    (False, None, LGTM, phases.REVIEW_CLEAN, "reviewer-protocol", None),
    (False, None, APPROVE, phases.REVIEW_CLEAN, None, "APPROVE"),
    (False, None, CHANGES, phases.REVIEW_CLEAN, None, "REQUEST_CHANGES"),
]


@pytest.mark.parametrize("row", REVIEW_TABLE)
def test_review_judgements(
    row: tuple[bool, FactoryError | None, Verdict | None, str, str | None, str | None],
) -> None:
    mutated, failure, verdict, postcondition, code, expected = row
    got = phases.judge_review(mutated=mutated, failure=failure, verdict=verdict)  # type: ignore[arg-type]
    assert (got.postcondition, got.verdict) == (postcondition, expected)
    assert (got.error.code if got.error else None) == code


def test_a_protocol_failure_becomes_the_reviewers_and_keeps_its_cause() -> None:
    failure = PROVIDER_PROTOCOL("codex left no verdict file")
    got = phases.judge_review(mutated=False, failure=failure, verdict=None)
    assert got.error is not None and got.error.spec is REVIEWER_PROTOCOL
    assert got.error.__cause__ is failure
    # twin: mutation wins over the same failure
    again = phases.judge_review(mutated=True, failure=failure, verdict=None)
    assert again.error is not None and again.error.spec is REVIEWER_MUTATION


def test_the_verdict_table_allows_exactly_one_repair() -> None:
    assert phases.AFTER_REVIEW == {
        ("initial_review", "APPROVE"): "completed",
        ("initial_review", "REQUEST_CHANGES"): "repair",
        ("final_review", "APPROVE"): "completed",
        ("final_review", "REQUEST_CHANGES"): "rejected",
    }


STAGES: list[tuple[Stage, VerdictName | None, int]] = [
    ("validating", None, 4),
    ("worker_running", None, 4),
    ("worker_completed", None, 3),
    ("initial_review_running", None, 3),
    ("initial_review_verdict", "APPROVE", 0),
    ("initial_review_verdict", "REQUEST_CHANGES", 2),
    ("repair_running", None, 2),
    ("repair_completed", None, 1),
    ("final_review_running", None, 1),
    ("final_review_verdict", "REQUEST_CHANGES", 0),
    ("final_review_verdict", "APPROVE", 0),
    ("terminal_outcome", None, 0),
]


@pytest.mark.parametrize(("stage", "verdict", "expected"), STAGES)
def test_remaining_invocations(stage: Stage, verdict: VerdictName | None, expected: int) -> None:
    assert phases.remaining(stage, verdict) == expected


def test_remaining_never_increases_along_the_longest_path() -> None:
    path = [phases.remaining(s, v) for s, v, _ in STAGES if v != "APPROVE"]
    assert path == sorted(path, reverse=True) and path[0] == phases.MAX_INVOCATIONS


def test_terminal_status_and_exit_code_table() -> None:
    assert {s: int(c) for s, c in phases.EXIT_CODE.items()} == {
        "completed": 0,
        "rejected": 3,
        "failed": 4,
        "interrupted": 130,
    }
    assert phases.ended("rejected") == phases.Terminal("rejected", 3)


@pytest.mark.parametrize(
    ("exc", "status", "exit_code", "code"),
    [
        (KeyboardInterrupt(), "interrupted", 130, "interrupted"),
        (trio.Cancelled._create(), "interrupted", 130, "interrupted"),
        (ExceptionGroup("g", [PROVIDER_NETWORK("x")]), "failed", 4, "provider-network"),
        (PROVIDER_NETWORK("cannot reach /home/u/api"), "failed", 4, "provider-network"),
        (INTERNAL("a typed bug"), "failed", 1, "internal"),
        (RuntimeError("bug"), "failed", 1, "internal"),
        (ExceptionGroup("g", [PROVIDER_NETWORK("x"), RuntimeError("y")]), "failed", 1, "internal"),
    ],
)
def test_how_an_exception_after_the_reservation_ends_the_run(
    exc: BaseException, status: str, exit_code: int, code: str
) -> None:
    end = phases.terminal_for(exc)
    assert (end.status, end.exit_code) == (status, exit_code)
    assert end.error is not None and end.error.code == code
    assert "/home/" not in end.error.message  # a receipt's error carries no paths


def test_a_route_problem_turns_a_verdict_into_a_failure_and_nothing_else() -> None:
    problem = (SCENARIO_UNCONSUMED, "the CLIs did not follow the rehearsal scenario")
    for status in ("completed", "rejected"):
        end = phases.with_route_problem(phases.ended(status), problem)
        assert (end.status, end.exit_code) == ("failed", 4)
        assert end.error is not None and end.error.code == "rehearsal-scenario-unconsumed"
    failed = phases.terminal_for(PROVIDER_NETWORK("x"))
    assert phases.with_route_problem(failed, problem) == failed  # an earlier failure stands
    assert phases.with_route_problem(phases.ended("completed"), None) == phases.ended("completed")

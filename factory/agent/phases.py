"""The agent run's judgements, as pure tables and functions (SPEC A-3…A-6, A-9, F-3).

Nothing here runs a process, reads a file or looks at a clock: :mod:`factory.agent.run`
observes (HEAD, index, trees, the provider's result), hands the observations to these
functions, and does what they decide. Tests call them directly with tables.

Phase table (exit codes per F-3)::

    worker ─ HEAD/index moved, git state changed ─────► failed  worker-git-mutation (4)
           ─ nothing changed ─────────────────────────► failed  no-candidate-change (4)
    initial review ─ tree/control/identity changed ───► failed  reviewer-mutation (4)
                   ─ no valid verdict ────────────────► failed  reviewer-protocol (4)
                   ─ APPROVE ─────────────────────────► completed (0)
                   ─ REQUEST_CHANGES ─► repair (exactly one)
    repair ─ HEAD/index moved, git state changed ─────► failed  repair-git-mutation (4)
           ─ identity unchanged or empty ─────────────► failed  repair-no-change (4)
    final review (fresh session, repaired identity) ─ same checks as above
                 ─ APPROVE ───────────────────────────► completed (0)
                 ─ REQUEST_CHANGES ───────────────────► rejected (3) — never a 2nd repair
    any provider failure ─────────────────────────────► failed  provider-* (4)
    cancellation / Ctrl-C ────────────────────────────► interrupted (130), then re-raised
    anything else (a bug) ────────────────────────────► failed, exit 1, then re-raised
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from factory.agent.faults import (
    NO_CANDIDATE_CHANGE,
    REPAIR_GIT_MUTATION,
    REPAIR_NO_CHANGE,
    REVIEWER_MUTATION,
    REVIEWER_PROTOCOL,
    WORKER_GIT_MUTATION,
    interrupted,
    typed_error,
    without_paths,
)
from factory.agent.observer import Outcome, Stage
from factory.agent.receipt import ErrorRecord, PhaseName, VerdictName
from factory.errors import INTERNAL, INTERRUPTED, Code, ExitCode, FactoryError, ProviderFailure
from factory.provider_api import PROVIDER_PROTOCOL, Verdict

Editor = Literal["worker", "repair"]
Next = Literal["completed", "repair", "rejected"]

MAX_INVOCATIONS: Final = 4

#: Provider invocations still reachable when a stage begins (SPEC A-9). A verdict stage
#: depends on the verdict: see :func:`remaining`.
REMAINING: Final[dict[Stage, int]] = {
    "validating": 4,
    "worker_running": 4,
    "worker_completed": 3,
    "initial_review_running": 3,
    "repair_running": 2,
    "repair_completed": 1,
    "final_review_running": 1,
    "final_review_verdict": 0,
    "terminal_outcome": 0,
}

#: The stages a review begins and ends with.
REVIEW_STAGES: Final[dict[PhaseName, tuple[Stage, Stage]]] = {
    "initial_review": ("initial_review_running", "initial_review_verdict"),
    "final_review": ("final_review_running", "final_review_verdict"),
}

#: What follows each review's verdict: one repair at most, then the verdict is final.
AFTER_REVIEW: Final[dict[tuple[PhaseName, VerdictName], Next]] = {
    ("initial_review", "APPROVE"): "completed",
    ("initial_review", "REQUEST_CHANGES"): "repair",
    ("final_review", "APPROVE"): "completed",
    ("final_review", "REQUEST_CHANGES"): "rejected",
}

#: The exit code of each terminal status (SPEC F-3); an internal error is 1 whatever it is.
EXIT_CODE: Final[dict[Outcome, ExitCode]] = {
    "completed": ExitCode.OK,
    "rejected": ExitCode.REJECTED,
    "failed": ExitCode.FAILURE,
    "interrupted": ExitCode.INTERRUPTED,
}

# Postconditions as recorded in a phase (observed_postcondition).
HEAD_OR_INDEX_CHANGED: Final = "head-or-index-changed"
GIT_STATE_CHANGED: Final = "git-control-changed"
NO_CHANGE: Final = "head-and-index-unchanged; no-candidate-change"
REPAIR_UNCHANGED: Final = "head-and-index-unchanged; candidate-identity-unchanged-or-empty"
CANDIDATE_DERIVED: Final = "head-and-index-unchanged; candidate-derived"
REVIEW_MUTATED: Final = "worktree-tree-or-git-control-or-candidate-changed"
REVIEW_CLEAN: Final = "worktree-tree-git-control-and-candidate-unchanged"


@dataclass(frozen=True, slots=True)
class Judgement:
    """What code concluded about a phase: the postcondition it records and, when the
    phase failed, the typed error that ends the run (``None``: the phase holds)."""

    postcondition: str
    error: FactoryError | None = None
    verdict: VerdictName | None = None


@dataclass(frozen=True, slots=True)
class Terminal:
    """How a run ends: receipt status, exit code and the typed error it records."""

    status: Outcome
    exit_code: int
    error: ErrorRecord | None = None


def remaining(stage: Stage, verdict: VerdictName | None = None) -> int:
    """Provider invocations still reachable at ``stage`` (4 → 0, never increasing)."""
    if stage == "initial_review_verdict":
        return 0 if verdict == "APPROVE" else 2
    return REMAINING[stage]


def judge_editor(
    role: Editor,
    *,
    entry_unchanged: bool,
    changed_files: int,
    identity: str | None,
    initial_identity: str | None,
    git_changed: bool = False,
) -> Judgement:
    """The worker's or the repair's postcondition (SPEC A-3, A-6; issue 8 §1).

    ``git_changed``: anything of git besides the editor's own index file changed (the
    git directories are bound by exclusion: configuration, hooks, refs, in-progress
    state…). ``changed_files`` and ``identity`` describe the derived candidate; they are
    only looked at when git is unchanged and HEAD and the index equal their entry values.
    """
    if not entry_unchanged:
        mutation = WORKER_GIT_MUTATION if role == "worker" else REPAIR_GIT_MUTATION
        fact = f"the {role} moved HEAD or changed the index (commit, stage or checkout)"
        return Judgement(HEAD_OR_INDEX_CHANGED, mutation(fact))
    if git_changed:
        mutation = WORKER_GIT_MUTATION if role == "worker" else REPAIR_GIT_MUTATION
        fact = f"the {role} changed git's own state (configuration, hooks, refs or other)"
        return Judgement(GIT_STATE_CHANGED, mutation(fact))
    if role == "worker" and not changed_files:
        return Judgement(
            NO_CHANGE, NO_CANDIDATE_CHANGE("the worker left no change in the worktree")
        )
    if role == "repair" and (not changed_files or identity in (None, initial_identity)):
        fact = "the repair did not produce a different, non-empty candidate"
        return Judgement(REPAIR_UNCHANGED, REPAIR_NO_CHANGE(fact))
    return Judgement(CANDIDATE_DERIVED)


_NO_VERDICT = "the reviewer did not return APPROVE or REQUEST_CHANGES in the schema"


def judge_review(
    *,
    mutated: bool,
    failure: ProviderFailure | None,
    verdict: Verdict | None,
) -> Judgement:
    """The review's postcondition and verdict (SPEC A-5).

    Mutation is judged first and regardless of how the reviewer ended (``mutated``: the
    worktree tree, the git control files or the candidate identity changed). A provider
    failure then stands, except a protocol failure, which is the reviewer's
    (``reviewer-protocol``); so does a verdict outside the two values.
    """
    if mutated:
        fact = "the reviewer changed the worktree, git state or candidate"
        return Judgement(REVIEW_MUTATED, REVIEWER_MUTATION(fact))
    if failure is not None:
        if failure.spec is not PROVIDER_PROTOCOL:
            return Judgement(REVIEW_CLEAN, failure)
        error = REVIEWER_PROTOCOL(_NO_VERDICT)
        error.__cause__ = failure
        return Judgement(REVIEW_CLEAN, error)
    if verdict is None or verdict.verdict not in ("APPROVE", "REQUEST_CHANGES"):
        return Judgement(REVIEW_CLEAN, REVIEWER_PROTOCOL(_NO_VERDICT))
    return Judgement(REVIEW_CLEAN, verdict=verdict.verdict)


def record(code: Code[FactoryError], fact: str) -> ErrorRecord:
    """The receipt's error for ``code``: the fact and the code's next step, no paths."""
    return ErrorRecord(code=code.name, message=without_paths(f"{fact}; {code.next_step}"))


def terminal_for(exc: BaseException) -> Terminal:
    """How a run that raised ``exc`` after its reservation ends (SPEC A-2, F-3).

    After the reservation every typed error is a failure (4), never a refusal (2); an
    error of the internal family is a bug like any other (1, re-raised to the crash log).
    """
    if interrupted(exc):
        return Terminal(
            "interrupted", int(ExitCode.INTERRUPTED), record(INTERRUPTED, "the run was interrupted")
        )
    typed = typed_error(exc)
    if typed is not None and typed.exit_code != ExitCode.INTERNAL:
        error = ErrorRecord(code=typed.code, message=without_paths(typed.message))
        return Terminal("failed", int(ExitCode.FAILURE), error)
    return Terminal("failed", int(ExitCode.INTERNAL), record(INTERNAL, "internal error"))


def with_route_problem(end: Terminal, problem: tuple[Code[FactoryError], str] | None) -> Terminal:
    """A verdict reached outside the route's contract (e.g. a rehearsal whose script was
    not followed) is not a verdict: the run fails with the route's error (exit 4)."""
    if problem is None or end.status not in ("completed", "rejected"):
        return end
    code, fact = problem
    return Terminal("failed", int(ExitCode.FAILURE), record(code, fact))


def ended(status: Outcome) -> Terminal:
    """The terminal of a run that reached ``status`` without an error."""
    return Terminal(status, int(EXIT_CODE[status]))

"""How the run classifies what ended a phase (SPEC F-3, A-2).

Nurseries (the providers' process supervision, the rehearsal server) may wrap a
cancellation or a typed failure in an exception group; the run must still tell
"interrupted" (130) from a typed failure (4) from a bug (1).
"""

from __future__ import annotations

import re

import trio

from factory.errors import FactoryError, Failure


class AgentFailure(Failure):
    """A typed failure of the run after admission (exit 4); codes per the phase table."""


_RESET = "reset the worktree to its base and rerun"
WORKER_GIT_MUTATION = AgentFailure.define("worker-git-mutation", _RESET)
REPAIR_GIT_MUTATION = AgentFailure.define("repair-git-mutation", _RESET)
NO_CANDIDATE_CHANGE = AgentFailure.define(
    "no-candidate-change", "rephrase the task so the worker changes a file"
)
REPAIR_NO_CHANGE = AgentFailure.define(
    "repair-no-change", "the run ends without a second review; rerun with a clearer task"
)
REVIEWER_MUTATION = AgentFailure.define(
    "reviewer-mutation", "its review is void: reset the worktree and rerun"
)
REVIEWER_PROTOCOL = AgentFailure.define(
    "reviewer-protocol", "rerun; if it repeats, check the reviewer CLI's version (factory doctor)"
)
SCRATCH_UNAVAILABLE = AgentFailure.define(
    "scratch-unavailable", "set TMPDIR to a folder outside the worktree"
)
ROUTE_EVIDENCE_FAILED = AgentFailure.define(
    "route-evidence-failed", "check the evidence folder and rerun"
)


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``exc`` (``exc`` itself when it is not a group)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def interrupted(exc: BaseException) -> bool:
    """True for cancellation or Ctrl-C, also when a nursery wrapped it in a group."""
    return any(isinstance(e, trio.Cancelled | KeyboardInterrupt) for e in leaves(exc))


def typed_error(exc: BaseException) -> FactoryError | None:
    """The typed error inside ``exc`` (also when wrapped in a group), if that is all it is."""
    found = leaves(exc)
    if all(isinstance(e, FactoryError) for e in found):
        first = found[0]
        assert isinstance(first, FactoryError)
        return first
    return None


def failure_code(exc: BaseException) -> str:
    if interrupted(exc):
        return "interrupted"
    typed = typed_error(exc)
    return typed.code if typed is not None else "internal"


# An absolute path token: a "/" that does not continue a word, a number, a scheme ("://")
# or another path, up to whitespace or quoting punctuation. The bare token "/login" is
# Claude Code's slash command, which the auth-failure advice names: it is not a path.
_ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?!login(?![^\s'\"`(),;]))[^\s'\"`(),;]+")


def without_paths(message: str) -> str:
    """``message`` with absolute paths replaced by ``<path>`` (SPEC A-8: a receipt's error
    carries no paths). Provider messages name binaries and folders for the operator; the
    receipt keeps the code and the rest of the sentence."""
    return _ABS_PATH.sub("<path>", message)

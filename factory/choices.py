"""The model choices a user may make for a run (issue 28): which model the worker and the
repair use, which the reviewer uses, how many turns the worker may take, and the worker's
spend cap per invocation. Validated here, before anything runs; passed to the closed
profiles as typed values (no free-form argv), so the argv each phase ran with — recorded
in the receipt's ``argv_shape`` — says what was chosen.

Defaults are today's fixed values: 40 turns for the worker and 20 for the repair, a
5 USD cap per Claude invocation, each CLI's own default model. The reviewer CLI (Codex)
has no spend or turn cap of its own; ``--timeout-ms`` bounds it.
"""

from __future__ import annotations

import re
from argparse import Namespace
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from factory.errors import UsageError

A = TypeVar("A")
R = TypeVar("R")

CHOICE_INVALID = UsageError.define(
    "choice-invalid", "see 'factory agent --help' for the accepted values"
)
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/\[\]-]{0,99}")
WORKER_TURNS, REPAIR_TURNS, BUDGET_USD = 40, 20, "5"
MAX_TURNS = 500


@dataclass(frozen=True, slots=True)
class Choices:
    """What the user chose; ``None`` keeps the default."""

    model: str | None = None
    reviewer_model: str | None = None
    max_turns: int | None = None
    max_budget_usd: str | None = None

    def worker_turns(self) -> int:
        return WORKER_TURNS if self.max_turns is None else self.max_turns

    def repair_turns(self) -> int:
        """The repair fixes what one review named: half the worker's turns (at least 1)."""
        return REPAIR_TURNS if self.max_turns is None else max(1, self.max_turns // 2)

    def budget(self) -> str:
        return BUDGET_USD if self.max_budget_usd is None else self.max_budget_usd


def checked(
    model: str | None, reviewer_model: str | None, max_turns: int | None, budget: str | None
) -> Choices:
    """The choices, or ``choice-invalid`` (exit 2) naming the flag."""
    for flag, value in (("--model", model), ("--reviewer-model", reviewer_model)):
        if value is not None and not _MODEL.fullmatch(value):
            raise CHOICE_INVALID(f"{flag} must be a model name (letters, digits, . _ : / - [ ])")
    if max_turns is not None and not 1 <= max_turns <= MAX_TURNS:
        raise CHOICE_INVALID(f"--max-turns must be 1 to {MAX_TURNS}")
    return Choices(model, reviewer_model, max_turns, None if budget is None else _usd(budget))


def _usd(text: str) -> str:
    """A spend cap in US dollars, 0.01 to 1000 with at most two decimals, as written."""
    if not re.fullmatch(r"\d{1,4}(\.\d{1,2})?", text) or not (
        Decimal("0.01") <= Decimal(text) <= 1000
    ):
        raise CHOICE_INVALID("--max-budget-usd must be 0.01 to 1000 US dollars (e.g. 2.50)")
    return text


def choices_of(args: Namespace) -> Choices:
    """The model choices a command's flags ask for (``choice-invalid``, exit 2)."""
    return checked(
        getattr(args, "model", None),
        getattr(args, "reviewer_model", None),
        getattr(args, "max_turns", None),
        getattr(args, "max_budget_usd", None),
    )


def with_choices(agent: A, reviewer: R, choices: Choices) -> tuple[A, R]:
    """The profiles with the user's choices (a profile without ``with_choices``, a test's
    fake, is used as it is)."""
    if choices == Choices():
        return agent, reviewer
    pick = getattr(agent, "with_choices", None)
    chosen_agent: A = agent if pick is None else pick(choices)
    pick = getattr(reviewer, "with_choices", None)
    return chosen_agent, (reviewer if pick is None else pick(choices))

"""``factory batch run --test -- ARGV…``: after a task's run is approved, the decision gate
for its candidate, evaluated and accepted as ``factory publish`` does it (tests run by
factory as evidence; the review gate when the risk tier selects lenses) — and nothing past
it: publication stays one operator grant per candidate.

On the rehearsal route the scenario is ``publish-candidate-rehearsal`` (the demo's: the two
conditions no rehearsal can meet replaced by ones that say it is a rehearsal); otherwise the
built-in ``publish-candidate``. One gate store per batch (``DIR/gate.sqlite3``); the run id
is derived from the scenario, the receipt and the test command, so a resumed batch resumes
the same gate run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from factory.gate.scenario import Scenario
    from factory.pipeline.gatestep import GateStep

GateState = Literal["accepted", "held", "failed"]


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """How the decision gate ended for one task's candidate."""

    state: GateState
    run: str | None
    head: str | None
    why: str | None


def scenario_for(rehearsal: bool) -> Scenario:
    from importlib.resources import files

    from factory.gate.scenario import load_builtin, load_bytes

    if rehearsal:
        data = files("factory.pipeline").joinpath("publish-candidate-rehearsal.toml").read_bytes()
        return load_bytes(data, "toml")
    return load_builtin("publish-candidate")


def gate_task(
    receipt: Path, test_argv: list[str], store: Path, *, rehearsal: bool, export_to: Path
) -> GateOutcome:
    """Run (or resume) the gate for the receipt's candidate; never raises for a gate that
    does not accept — the outcome says so."""
    from factory.agent.verify import load_receipt
    from factory.errors import FactoryError
    from factory.operator.session import Held
    from factory.pipeline import gatestep

    step: GateStep | None = None
    try:
        scenario = scenario_for(rehearsal)
        parsed, _ = load_receipt(receipt)
        params = gatestep.run_params(scenario, receipt, parsed, test_argv)
        step = gatestep.GateStep(store, scenario, params, export_to)
        step()
    except Held as held:
        return _outcome("held", step, bounded(str(held)))
    except FactoryError as exc:
        return _outcome("failed", step, bounded(f"{exc.code}: {exc.fact}"))
    return _outcome("accepted", step, None)


def bounded(text: str, limit: int = 500) -> str:
    """The reason as data (the report's JSON escapes it; a screen makes it inert when it
    shows it), cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _outcome(state: GateState, step: GateStep | None, why: str | None) -> GateOutcome:
    if step is None:
        return GateOutcome(state, None, None, why)
    return GateOutcome(state, step.run, step.head, why)

"""The pure evaluator: (scenario, accepted state, evidence snapshot, caller time) →
candidate delta + trace (SPEC G: "the evaluator is pure").

No files, clock, network or store are touched here; the caller passes the time. Stages are
visited in topological order over the completed set: a stage whose prerequisite law holds
is evaluated (its completion law over condition results, every leaf traced), and a stage
that completes in this pass makes its dependants ready later in the same pass, so one
evaluation settles everything the snapshot decides. Completed stages stay completed
(progress is monotone); a stage that is not ready has its conditions left unevaluated and
says so. The scenario completes only by its own completion law.

The result is an :class:`Evaluation`: a record (``factory.gate-evaluation/1``, the model
:class:`factory.gate.evaluation.EvaluationRecord`) and its digest. Replaying the same
inputs gives byte-identical records — ``factory gate verify`` relies on that.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any

from factory.documents.canonical import canonical_bytes_plain, digest, tagged_sha256
from factory.gate import logic
from factory.gate.errors import OPEN_REFUSED
from factory.gate.evaluation import EVALUATION_SCHEMA, Base, Delta, EvaluationRecord, IntentRecord
from factory.gate.evidence import Evidence
from factory.gate.resolve import Context, Outcome, resolve
from factory.gate.scenario import Scenario
from factory.gate.state import RunState, intent_records
from factory.gate.values import format_instant

__all__ = ["EVALUATION_SCHEMA", "Evaluation", "candidate_id", "evaluate"]

CANDIDATE_TAG = "factory.gate-candidate/1"


class Evaluation:
    """A candidate: the record (inputs, delta, trace) as its model and as its JSON value;
    its canonical bytes, digest and candidate id are computed on first use (RFC 8785 over
    a large trace is the costly part, and a dry run that is never accepted does not need
    it). The record holds no float, so its RFC 8785 bytes take
    :func:`canonical_bytes_plain`'s C path."""

    __slots__ = ("__dict__", "model", "record")

    def __init__(self, model: EvaluationRecord) -> None:
        self.model = model
        self.record = model.json_value()

    @cached_property
    def canonical(self) -> bytes:
        return canonical_bytes_plain(self.record)

    @cached_property
    def digest(self) -> str:
        return tagged_sha256(EVALUATION_SCHEMA, self.canonical)

    @cached_property
    def candidate(self) -> str:
        return candidate_id(self.base_head, self.digest)

    @property
    def delta(self) -> dict[str, Any]:
        delta: dict[str, Any] = self.record["delta"]
        return delta

    @property
    def base_head(self) -> str:
        return str(self.record["base"]["head"])

    @property
    def changes_nothing(self) -> bool:
        d = self.delta
        return not (d["complete"] or d["open"] or d["scenario_complete"])


def candidate_id(base_head: str, evaluation_digest: str) -> str:
    """The id of the candidate that extends ``base_head`` with that evaluation."""
    return digest(CANDIDATE_TAG, {"base": base_head, "evaluation": evaluation_digest})


def evaluate(
    scenario: Scenario,
    state: RunState,
    evidence: Iterable[Evidence],
    now: int,
    opens: Sequence[str] = (),
) -> Evaluation:
    """Derive the candidate for ``state`` from ``evidence`` at caller time ``now`` (ns).

    Raises:
        OpenRefused: ``opens`` names a stage that is unknown, not ready, open or completed.
    """
    _check_opens(scenario, state, opens)
    with _collector_paused():
        return _evaluate(scenario, state, evidence, now, opens)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while evaluating, then restore it.

    An evaluation builds one container per condition, leaf and stage and no reference
    cycles (reference counting frees all of it), yet the allocations trigger collections
    that rescan every live object — a fifth of the time over 10,000 conditions.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _evaluate(
    scenario: Scenario,
    state: RunState,
    evidence: Iterable[Evidence],
    now: int,
    opens: Sequence[str],
) -> Evaluation:
    snapshot = sorted(evidence, key=lambda r: r.id)
    by_condition: dict[str, list[Evidence]] = {}
    for item in snapshot:
        by_condition.setdefault(item.condition, []).append(item)
    ctx = Context(state.params, scenario.keys, now)
    outcomes: dict[str, Outcome] = {}

    def leaf(cid: str) -> str:
        outcome = outcomes.get(cid)
        if outcome is None:
            outcome = resolve(scenario.conditions[cid], by_condition.get(cid, ()), ctx)
            outcomes[cid] = outcome
        return outcome.result

    completed = set(state.completed)
    newly: list[str] = []
    stages: list[dict[str, Any]] = []
    if not state.scenario_completed:
        for stage_id in scenario.order:
            stages.append(_stage(scenario, state, stage_id, completed, newly, opens, leaf))
    done = not state.scenario_completed and logic.holds(scenario.completion, completed)
    intents = intent_records(scenario, newly, done, state.seq + 1)
    delta = Delta(complete=newly, open=sorted(opens), scenario_complete=done,
                  intents=[IntentRecord(**intent) for intent in intents])  # fmt: skip
    return Evaluation(
        EvaluationRecord(
            run=state.run,
            scenario=scenario.spec_hash,
            base=Base(head=state.head, seq=state.seq),
            now=format_instant(now),
            opens=sorted(opens),
            evidence=[r.ref() for r in snapshot],
            delta=delta,
            run_completed_before=state.scenario_completed,
            conditions=[outcomes[c].to_json() for c in sorted(outcomes)],
            unevaluated=sorted(set(scenario.conditions) - set(outcomes)),
            stages=stages,
        )
    )


def _check_opens(scenario: Scenario, state: RunState, opens: Sequence[str]) -> None:
    if len(set(opens)) != len(opens):
        raise OPEN_REFUSED("a stage is named twice in --open")
    for stage_id in opens:
        if stage_id not in scenario.stages:
            raise OPEN_REFUSED(f"stage {stage_id!r} is not in the scenario")
        current = state.stage_state(scenario, stage_id)
        if current != "ready":
            raise OPEN_REFUSED(f"stage {stage_id!r} is {current}, not ready")


def _stage(
    scenario: Scenario,
    state: RunState,
    stage_id: str,
    completed: set[str],
    newly: list[str],
    opens: Sequence[str],
    leaf: Any,
) -> dict[str, Any]:
    stage = scenario.stages[stage_id]
    if stage_id in state.completed:
        return {"stage": stage_id, "before": "completed", "after": "completed"}
    before = "open" if stage_id in state.opened or stage_id in opens else None
    ready = stage.after is None or logic.holds(stage.after, completed)
    if not ready:
        return {"stage": stage_id, "before": before or "not-ready", "after": "not-ready"}
    progressed = bool(newly)
    result, tree = logic.trace(stage.complete, leaf)
    after = before or "ready"
    if result == logic.TRUE:
        completed.add(stage_id)
        newly.append(stage_id)
        after = "completed"
    # Before this pass it was ready too, unless earlier completions of this pass made it so.
    was = before or ("ready" if not progressed else state.stage_state(scenario, stage_id))
    return {"stage": stage_id, "before": was, "after": after, "completion": tree}

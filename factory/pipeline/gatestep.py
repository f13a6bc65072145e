"""The non-interactive half of ``factory publish``: run the decision gate for one agent
receipt's candidate (SPEC X-1).

1. **Parameters** (:func:`run_params`): the scenario's declared params are filled from the
   receipt — ``actor`` (the worker agent under test, which produced none of the evidence),
   ``receipt``, ``candidate_tree``, ``worktree`` — and ``test_argv`` from ``--test -- ARGV``
   (a JSON array). The run id is derived from the scenario's spec hash and those params,
   so the same receipt, scenario and test command resume the same run, and anything else
   is a different run.
2. **Start or resume** the run (the gate's own replay-safe start).
3. **Acquire in stage order** (:func:`advance`): for each stage not yet completed, in the
   scenario's topological order, acquire its completion law's bound conditions one at a
   time, re-deriving after each, and stop acquiring that stage once it completes (an
   ``ANY`` needs no more leaves: a low-risk candidate never runs the review gate); a stage
   that does not complete stops the walk — later stages are not ready, so their evidence
   (the tests, the review) is not gathered for nothing.
   Within one walk, conditions bound to the same receipt share one verification of it
   (:func:`shared_observations`).
4. **Evaluate and accept** (compare-and-swap onto the head) whatever progress the evidence
   makes. A head that moved in between is ``gate-stale``; an unknown commit outcome is
   ``commit-outcome-unknown``; a condition that failed (operationally or in integrity) is
   ``gate-condition-failed`` — after its progress, if any, was accepted.
5. Export the runpack beside OUT and bind the run into the operator receipt; a run that is
   not complete raises :class:`~factory.operator.session.Held` with the explanation.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from factory.display import inert
from factory.documents.canonical import digest
from factory.errors import Failure, Refused
from factory.gate import logic
from factory.gate.acquire import ProviderFn, acquire, default_providers
from factory.gate.errors import COMMIT_OUTCOME_UNKNOWN, STALE
from factory.gate.evaluate import Evaluation
from factory.gate.providers import Observed
from factory.gate.scenario import Scenario
from factory.gate.service import Gate, LoadedRun
from factory.gate.store import SqliteStore
from factory.operator.receipt import GateRecord
from factory.operator.session import Held
from factory.pipeline import explain
from factory.pipeline.binding import gate_record

ACTOR = "agent-worker"
RUN_TAG = "factory.publish-gate-run/1"
FILLABLE = ("actor", "receipt", "candidate_tree", "worktree", "test_argv")
Progress = Callable[[str], None]


class PublishRefused(Refused):
    """``factory publish`` cannot start the gate run it was asked for (exit 2)."""


class GateConditionFailed(Failure):
    """A gate condition failed operationally or in integrity; nothing was spent (exit 4)."""


TEST_COMMAND_REQUIRED = PublishRefused.define(
    "test-command-required", "name the command that runs your tests: --test -- ARGV…"
)
SCENARIO_PARAM_UNFILLABLE = PublishRefused.define(
    "scenario-param-unfillable",
    "a scenario for factory publish may declare only actor, receipt, candidate_tree, "
    "worktree and test_argv",
)
GATE_CONDITION_FAILED = GateConditionFailed.define(
    "gate-condition-failed",
    "read which condition failed and why above (and in the runpack); fix it, then run "
    "factory publish again",
    default=True,
)


def run_params(
    scenario: Scenario, receipt_path: Path, receipt: Any, test_argv: Sequence[str] | None
) -> dict[str, str]:
    """The scenario's params for this receipt (see the module docstring).

    Raises:
        PublishRefused: a param factory publish cannot fill, or no test command.
    """
    cand = receipt.final_candidate()
    available = {
        "actor": ACTOR,
        "receipt": os.path.abspath(receipt_path),
        "candidate_tree": None if cand is None else cand.body.candidate_tree,
        "worktree": os.path.abspath(receipt.worktree),
        "test_argv": json.dumps(list(test_argv)) if test_argv else None,
    }
    out = {}
    for name in scenario.params:
        if name not in FILLABLE:
            raise SCENARIO_PARAM_UNFILLABLE(f"scenario {scenario.id} declares param {name!r}")
        value = available[name]
        if value is None and name == "test_argv":
            raise TEST_COMMAND_REQUIRED(f"scenario {scenario.id} runs a test command")
        out[name] = value or ""
    return out


def run_id(scenario: Scenario, params: Mapping[str, str]) -> str:
    """``publish-<24 hex>``: one run per (scenario, params)."""
    rev = digest(RUN_TAG, {"scenario": scenario.spec_hash, "params": dict(params)})
    return "publish-" + rev.removeprefix("sha256:")[:24]


#: Providers whose observation does not depend on ``select``: within one walk, conditions
#: that bind them with the same other arguments share one observation.
SHARED = frozenset({"agent-receipt"})


def shared_observations(providers: Mapping[str, ProviderFn]) -> dict[str, ProviderFn]:
    """``providers`` where each provider in :data:`SHARED` observes once per distinct
    arguments (``select`` aside): the four agent-approved conditions read one
    verification of the receipt instead of four. Only for one walk (:func:`advance`)."""
    out = dict(providers)
    for name in SHARED & set(providers):
        out[name] = _once(providers[name])
    return out


def _once(fn: ProviderFn) -> ProviderFn:
    seen: dict[str, Observed] = {}

    async def acquire_once(args: Mapping[str, Any]) -> Observed:
        key = json.dumps({k: v for k, v in args.items() if k != "select"}, sort_keys=True)
        if key not in seen:
            seen[key] = await fn(args)
        return seen[key]

    return acquire_once


def _stage_after(candidate: Evaluation, stage: str) -> str:
    for item in candidate.record["stages"]:
        if item["stage"] == stage:
            return str(item["after"])
    return "completed"  # a completed run lists no stages


async def advance(
    gate: Gate,
    run: LoadedRun,
    providers: Mapping[str, ProviderFn],
    progress: Progress | None = None,
) -> Evaluation:
    """Acquire stage by stage (see the module docstring); the last candidate derived."""
    providers = shared_observations(providers)
    candidate = gate.derive(run)
    for sid in run.scenario.order:
        if _stage_after(candidate, sid) in ("completed", "not-ready"):
            if _stage_after(candidate, sid) == "not-ready":
                break
            continue
        law = run.scenario.stages[sid].complete
        for cid in dict.fromkeys(logic.refs(law)):
            if run.scenario.conditions[cid].acquire is None:
                continue
            await acquire(gate, run, providers=providers, only={cid}, progress=progress)
            candidate = gate.derive(run)
            if _stage_after(candidate, sid) == "completed":
                break
        if _stage_after(candidate, sid) != "completed":
            break
    return candidate


def review_details(gate: Gate, run: LoadedRun, record: Mapping[str, Any]) -> dict[str, str]:
    """For a review-gate condition that was not true: the gate's own result and reason."""
    out: dict[str, str] = {}
    evidence = {e.id: e for e in gate.store.evidence(run.run)}
    for cond in record["conditions"]:
        found = evidence.get(cond["record"]) if cond["record"] else None
        if found is None or found.producer != "factory:review-gate" or cond["result"] == "true":
            continue
        for artefact in json.loads(found.payload).get("artefacts", []):
            blob = gate.store.blob(str(artefact.get("sha256")))
            try:
                doc = json.loads(blob) if blob else None
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                denial = doc.get("denial") or {}
                code = f"{denial.get('stage')}/{denial.get('code')}" if denial else "none"
                out[cond["condition"]] = (
                    f"review gate said {doc.get('result')} ({code}): {doc.get('reason')}"
                )
    return out


@dataclass
class GateStep:
    """The ``before`` hook of the publish flow: runs the gate, binds it, or holds."""

    store: Path
    scenario: Scenario
    params: dict[str, str]
    export_to: Path
    providers: Mapping[str, ProviderFn] = field(default_factory=default_providers)
    progress: Progress | None = None
    clock: Callable[[], int] = time.time_ns
    #: test seam: runs between the evaluation and the acceptance (someone accepts there)
    before_accept: Callable[[Gate, LoadedRun], None] | None = None
    record: GateRecord | None = None
    head: str | None = None
    held: list[explain.Pending] = field(default_factory=list)

    @property
    def run(self) -> str:
        return run_id(self.scenario, self.params)

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def __call__(self) -> None:
        gate = Gate(SqliteStore(self.store), clock=self.clock)
        try:
            self._step(gate)
        finally:
            gate.store.close()

    def _step(self, gate: Gate) -> None:
        run, created = gate.start(self.run, self.scenario, self.params)
        self._say(
            f"gate: run {run.run} ({'started' if created else 'resumed'}, {self.scenario.id})"
        )
        failed: list[str] = []
        if not run.state.scenario_completed:
            work = functools.partial(advance, gate, run, self.providers, self._say)
            candidate = trio.run(work)
            failed = [c["condition"] for c in candidate.record["conditions"] if c["failures"]]
            if not candidate.changes_nothing:
                run = self._accept(gate, run, candidate)
            self.held = explain.pending(
                run.scenario, candidate.record, review_details(gate, run, candidate.record)
            )
        self.record = gate_record(gate, run, self.store, self.export_to)
        self.head = run.state.head
        if failed:
            why = "; ".join(f"{p.condition}: {p.why}" for p in self.held if p.condition in failed)
            raise GATE_CONDITION_FAILED(inert(f"gate run {run.run}: {why}"))
        if not run.state.scenario_completed:
            raise Held("\n".join(inert(line) for line in explain.lines(run.run, self.held)))
        self._say(f"gate: run {run.run} accepted, complete at {run.state.head}")

    def _accept(self, gate: Gate, run: LoadedRun, candidate: Evaluation) -> LoadedRun:
        if self.before_accept is not None:
            self.before_accept(gate, run)
        result = gate.accept(run, candidate)
        if result.outcome == "stale":
            raise STALE(
                f"gate run {run.run}: its head moved while factory publish evaluated it "
                "(someone accepted more evidence in between); nothing was accepted"
            )
        if result.outcome == "unknown" or result.run is None:
            raise COMMIT_OUTCOME_UNKNOWN(
                f"gate run {run.run}: the acceptance may or may not be stored"
            )
        return result.run

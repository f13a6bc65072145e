"""A run's accepted history: entries, the head hash chain, and the state they imply.

Every run is an append-only list of entries. Entry 0 (``start``) binds the scenario's spec
hash and the run's parameters; each later entry (``accept``) carries one accepted
candidate: its request id, candidate id, evaluation digest and delta. An entry's hash is the
domain-separated digest of ``{schema, run, seq, prev, body}``, so each hash commits to the
whole history before it; the run's *head* is the hash of its last entry.

:func:`replay` re-validates a history from scratch: sequence numbers, the chain, and the
laws — a stage completes only when its prerequisites were met, a stage opens only while
ready, nothing completes twice, the scenario completes only by its completion law, and
intents are exactly the ones the scenario declares for what completed. A stored history that
fails any of these is corrupt (:class:`~factory.gate.errors.StoreCorrupt`), never repaired.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from factory.documents.canonical import digest
from factory.gate import logic
from factory.gate.errors import STORE_CORRUPT
from factory.gate.reports import ENTRY_SCHEMA, GateEntry
from factory.gate.scenario import Intent, Scenario

GENESIS_PREV = "sha256:" + "0" * 64


@dataclass(frozen=True, slots=True)
class Entry:
    run: str
    seq: int
    prev: str
    body: dict[str, Any]
    hash: str

    def to_json(self) -> dict[str, Any]:
        """The ``factory.gate-entry/1`` document (:class:`factory.gate.reports.GateEntry`)."""
        return GateEntry(run=self.run, seq=self.seq, prev=self.prev, body=self.body,
                         hash=self.hash).to_json_value()  # fmt: skip


def entry_hash(run: str, seq: int, prev: str, body: Mapping[str, Any]) -> str:
    return digest(ENTRY_SCHEMA, {"schema": ENTRY_SCHEMA, "run": run, "seq": seq, "prev": prev,
                                 "body": dict(body)})  # fmt: skip


def make_entry(run: str, seq: int, prev: str, body: dict[str, Any]) -> Entry:
    return Entry(run, seq, prev, body, entry_hash(run, seq, prev, body))


@dataclass(frozen=True, slots=True)
class RunState:
    """What the accepted history implies. ``requests`` maps request id → (candidate id, seq);
    it is shared by a state and its successors (histories only grow)."""

    run: str
    spec_hash: str
    params: Mapping[str, str]
    head: str
    seq: int
    completed: frozenset[str] = frozenset()
    opened: frozenset[str] = frozenset()
    scenario_completed: bool = False
    intents: tuple[dict[str, Any], ...] = ()
    requests: dict[str, tuple[str, int]] = field(default_factory=dict)

    def stage_state(
        self, scenario: Scenario, stage_id: str
    ) -> Literal["completed", "open", "ready", "not-ready"]:
        """``completed``, ``open``, ``ready`` or ``not-ready``."""
        if stage_id in self.completed:
            return "completed"
        if stage_id in self.opened:
            return "open"
        after = scenario.stages[stage_id].after
        return "ready" if after is None or logic.holds(after, self.completed) else "not-ready"


def start_body(scenario: Scenario, params: Mapping[str, str]) -> dict[str, Any]:
    return {"kind": "start", "scenario": scenario.spec_hash, "scenario_id": scenario.id,
            "params": dict(sorted(params.items()))}  # fmt: skip


def intent_records(
    scenario: Scenario, stages: Iterable[str], complete: bool, seq: int
) -> list[dict[str, Any]]:
    """The intents an accepted delta makes eligible, in a fixed order."""
    out: list[dict[str, Any]] = []

    def add(source: str, items: tuple[Intent, ...]) -> None:
        for index, intent in enumerate(items):
            out.append({"id": f"{seq}/{source}/{index}", "kind": intent.kind,
                        "detail": intent.detail, "source": source})  # fmt: skip

    for stage_id in stages:
        add(stage_id, scenario.stages[stage_id].intents)
    if complete:
        add("(scenario)", scenario.completion_intents)
    return out


def genesis(scenario: Scenario, entry: Entry) -> RunState:
    body = entry.body
    if entry.seq != 0 or entry.prev != GENESIS_PREV or body.get("kind") != "start":
        raise STORE_CORRUPT(f"run {entry.run}: entry 0 is not a start entry")
    if body.get("scenario") != scenario.spec_hash:
        raise STORE_CORRUPT(
            f"run {entry.run}: the stored scenario does not hash to its start entry"
        )
    return RunState(entry.run, scenario.spec_hash, dict(body.get("params", {})), entry.hash, 0)


def apply(scenario: Scenario, state: RunState, entry: Entry) -> RunState:
    """Apply one accept entry after checking the chain and the laws."""
    where = f"run {state.run} entry {entry.seq}"
    if entry.seq != state.seq + 1 or entry.prev != state.head or entry.run != state.run:
        raise STORE_CORRUPT(f"{where}: breaks the head chain")
    body = entry.body
    delta = body.get("delta")
    if body.get("kind") != "accept" or not isinstance(delta, dict):
        raise STORE_CORRUPT(f"{where}: not an accept entry")
    completed, opened = set(state.completed), set(state.opened)
    for stage_id in delta.get("open", []):
        if stage_id not in scenario.stages or state.stage_state(scenario, stage_id) != "ready":
            raise STORE_CORRUPT(f"{where}: opens a stage that was not ready")
        opened.add(stage_id)
    for stage_id in delta.get("complete", []):
        stage = scenario.stages.get(stage_id)
        if stage is None or stage_id in completed:
            raise STORE_CORRUPT(f"{where}: completes an unknown or completed stage")
        if stage.after is not None and not logic.holds(stage.after, completed):
            raise STORE_CORRUPT(f"{where}: completes a stage whose prerequisites were not met")
        completed.add(stage_id)
    done = bool(delta.get("scenario_complete"))
    if done and (state.scenario_completed or not logic.holds(scenario.completion, completed)):
        raise STORE_CORRUPT(f"{where}: completes the scenario against its completion law")
    intents = intent_records(scenario, delta.get("complete", []), done, entry.seq)
    if delta.get("intents", []) != intents:
        raise STORE_CORRUPT(f"{where}: carries intents the scenario does not declare")
    request = body.get("request")
    if not isinstance(request, str) or request in state.requests:
        raise STORE_CORRUPT(f"{where}: reuses request id")
    # Shared, not copied: a history is replayed forward only, and copying would make a
    # long replay quadratic.
    requests = state.requests
    requests[request] = (str(body.get("candidate")), entry.seq)
    return replace(
        state,
        head=entry.hash,
        seq=entry.seq,
        completed=frozenset(completed),
        opened=frozenset(opened - completed),
        scenario_completed=state.scenario_completed or done,
        intents=state.intents + tuple(intents),
        requests=requests,
    )


def check_hash(entry: Entry) -> None:
    if entry_hash(entry.run, entry.seq, entry.prev, entry.body) != entry.hash:
        raise STORE_CORRUPT(f"run {entry.run} entry {entry.seq}: its hash does not match")


def replay(scenario: Scenario, entries: Iterable[Entry]) -> RunState:
    """Re-validate a whole history (see the module docstring) and return its state."""
    state: RunState | None = None
    for entry in entries:
        check_hash(entry)
        state = genesis(scenario, entry) if state is None else apply(scenario, state, entry)
    if state is None:
        raise STORE_CORRUPT("the run has no entries")
    return state

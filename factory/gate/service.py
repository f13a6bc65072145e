"""The gate's API: start a run, admit evidence, derive and accept candidates, read the head.

This is what the CLI (``factory gate …``) and the pipeline (``factory publish``) call.
Effects are injected: the store (:class:`~factory.gate.store.GateStore`) and the clock
(nanoseconds since the epoch). Acquisition lives in :mod:`factory.gate.acquire`.

::

    gate = Gate(SqliteStore(path))
    gate.start("run-1", scenario, {"actor": "worker", "candidate_tree": tree})
    gate.submit("run-1", "ci-1", payload_bytes)          # or acquire(...) for bindings
    run = gate.load("run-1")                             # re-validated state + settled doubts
    candidate = gate.derive(run)                         # pure evaluation at the clock's now
    result = gate.accept(run, candidate)                 # compare-and-swap on the head
    result.outcome in ("committed", "replayed", "stale", "unknown")
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from factory.documents.canonical import tagged_sha256
from factory.documents.reading import read_own
from factory.gate import state as history
from factory.gate.errors import (
    PARAMS_INVALID,
    REQUEST_CONFLICT,
    RUN_CONFLICT,
    RUN_MISSING,
    STORE_CORRUPT,
    ScenarioInvalid,
)
from factory.gate.evaluate import EVALUATION_SCHEMA, Evaluation, evaluate
from factory.gate.evidence import Evidence, Signature, admit
from factory.gate.reports import GateStatus, Head, ScenarioRef
from factory.gate.scenario import ID, Scenario, load_bytes
from factory.gate.store import AppendResult, GateStore, same_ask
from factory.models import StrictModel

Clock = Callable[[], int]
MAX_PARAM = 4096


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A run as loaded now: its scenario, re-validated state, and in-doubt acceptances
    settled on this load (``{request, candidate, outcome: committed|not-committed}``)."""

    scenario: Scenario
    state: history.RunState
    settled: tuple[dict[str, Any], ...] = ()

    @property
    def run(self) -> str:
        return self.state.run


@dataclass(frozen=True, slots=True)
class Accepted:
    """An acceptance attempt: the store's outcome and the run as it now stands (when the
    outcome is ``committed`` or ``replayed``)."""

    outcome: str
    seq: int | None
    head: str | None
    candidate: str
    request: str
    run: LoadedRun | None = None


class Ask(StrictModel):
    """What an acceptance request asked — its identity, shared by an identical retry.

    Within a run (which fixes the scenario and the parameters): the SHA-256 of each
    evidence file it submitted, the stages it opened, and whether it acquired the bound
    evidence. Timing (``--now``, the clock) and output (``--trace``) are not part of it:
    a retry seconds later asks the same. Stored in the accept entry as ``asked``.
    """

    submit: tuple[str, ...]
    open: tuple[str, ...]
    acquire: bool

    @classmethod
    def of(cls, *, submitted: Iterable[str], opens: Iterable[str], acquire: bool) -> Ask:
        """The ask in canonical order (sorted, each once): the order of flags means nothing."""
        return cls(submit=tuple(sorted(set(submitted))), open=tuple(sorted(set(opens))),
                   acquire=acquire)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Committed:
    """An acceptance as it was committed: its entry, its evaluation record (from the
    stored bytes the entry names) and the run as it stood right after it."""

    entry: history.Entry
    record: dict[str, Any]
    run: LoadedRun


@dataclass
class Gate:
    store: GateStore
    clock: Clock = field(default=time.time_ns)

    def start(
        self, run: str, scenario: Scenario, params: Mapping[str, str]
    ) -> tuple[LoadedRun, bool]:
        """Create ``run``; a repeat with the same scenario and params replays (False).

        Raises:
            ParamsInvalid: ``params`` do not match the scenario's declared names.
            RunConflict: the id is taken by another scenario or other params.
        """
        if not isinstance(run, str) or not ID.fullmatch(run):
            raise PARAMS_INVALID("a run id is 1-128 letters, digits, '_', '.', '-'")
        _check_params(scenario, params)
        entry = history.make_entry(
            run, 0, history.GENESIS_PREV, history.start_body(scenario, params)
        )
        created = self.store.create_run(
            run, scenario.source, scenario.source_format, scenario.spec_hash, entry
        )
        if not created:
            stored = self.store.entries(run)
            if not stored or stored[0].hash != entry.hash:
                raise RUN_CONFLICT(
                    f"run {run} already exists with another scenario or other params"
                )
        return self.load(run), created

    def load(self, run: str) -> LoadedRun:
        """Load and re-validate ``run``; settle any acceptance whose outcome was unknown."""
        source = self.store.run_source(run)
        if source is None:
            raise RUN_MISSING(f"no gate run {run!r} in this store")
        data, fmt, spec_hash = source
        try:
            scenario = load_bytes(data, fmt)
        except ScenarioInvalid as exc:
            raise STORE_CORRUPT(
                f"run {run}: its stored scenario no longer loads ({exc.fact})"
            ) from exc
        if scenario.spec_hash != spec_hash:
            raise STORE_CORRUPT(f"run {run}: the stored scenario does not match its spec hash")
        state = history.replay(scenario, self.store.entries(run))
        settled = []
        for doubt in self.store.in_doubt(run):
            found = state.requests.get(doubt["request"])
            outcome = "committed" if found and found[0] == doubt["candidate"] else "not-committed"
            settled.append({**doubt, "outcome": outcome})
            self.store.settle(run, doubt["request"])
        return LoadedRun(scenario, state, tuple(settled))

    def submit(
        self, run: LoadedRun, evidence_id: str, payload: bytes, signature: Signature | None = None
    ) -> tuple[Evidence, bool]:
        """Admit submitted evidence; ``(record, False)`` when the same id and bytes replay.

        Raises:
            EvidenceRefused: the bytes fail the admission boundary.
            EvidenceConflict: the id already holds other bytes in this run.
        """
        record = admit(
            evidence_id, payload, conditions=run.scenario.conditions, ingress="submitted",
            signature=signature,
        )  # fmt: skip
        return record, self.store.put_evidence(run.run, record)

    def record_acquired(self, run: LoadedRun, record: Evidence) -> bool:
        """Store an acquired record (built by :mod:`factory.gate.acquire`)."""
        return self.store.put_evidence(run.run, record)

    def derive(
        self, run: LoadedRun, *, now: int | None = None, opens: Sequence[str] = ()
    ) -> Evaluation:
        """Evaluate ``run`` against every evidence record it holds (pure, at ``now``)."""
        when = self.clock() if now is None else now
        return evaluate(run.scenario, run.state, self.store.evidence(run.run), when, opens)

    def accept(
        self,
        run: LoadedRun,
        candidate: Evaluation,
        request: str | None = None,
        *,
        asked: Ask | None = None,
    ) -> Accepted:
        """Compare-and-swap ``candidate`` onto the run's head.

        ``request`` (default: the candidate id) is the idempotency key: the same key with
        the same candidate — or, when ``asked`` is given, the same ask — replays the first
        result; otherwise it is a :class:`~factory.gate.errors.RequestConflict`.
        """
        key = candidate.candidate if request is None else request
        if not ID.fullmatch(key) and key != candidate.candidate:
            raise PARAMS_INVALID("a request id is 1-128 letters, digits, '_', '.', '-'")
        base = candidate.record["base"]
        body = {"kind": "accept", "request": key, "candidate": candidate.candidate,
                "evaluation": candidate.digest, "delta": candidate.delta}  # fmt: skip
        if asked is not None:
            body["asked"] = asked.to_json_value()
        entry = history.make_entry(run.run, int(base["seq"]) + 1, str(base["head"]), body)
        applied = None
        if run.state.head == entry.prev and key not in run.state.requests:
            # Check the laws before writing (a candidate that breaks them is a bug), and
            # keep the successor state so a long run is not re-read after every accept.
            applied = history.apply(run.scenario, _detached(run.state), entry)
        result: AppendResult = self.store.append(
            run.run, entry.prev, entry, candidate.canonical, candidate.digest
        )
        loaded = None
        if result.outcome == "committed" and applied is not None:
            loaded = LoadedRun(run.scenario, applied)
        elif result.outcome in ("committed", "replayed"):
            loaded = self.load(run.run)
        return Accepted(result.outcome, result.seq, result.head, candidate.candidate, key, loaded)

    def prior(self, run: LoadedRun, request: str, asked: Ask) -> Committed | None:
        """The acceptance ``request`` committed in ``run`` when it asked exactly ``asked``
        (an identical retry: replay it); ``None`` when the run has no such request.

        Raises:
            RequestConflict: the request id was used for another ask (or for an
                acceptance that recorded none, which no retry can be shown identical to).
        """
        if request not in run.state.requests:
            return None
        done = self.committed(run, request)
        stored = done.entry.body.get("asked")
        if not same_ask(stored, asked.to_json_value()):
            raise REQUEST_CONFLICT(
                f"request {request} already accepted {_what_differs(stored, asked)} in run "
                f"{run.run} (seq {done.entry.seq}); an identical retry would replay it"
            )
        return done

    def committed(self, run: LoadedRun, request: str) -> Committed:
        """What ``request`` (accepted in ``run``) committed, read back from the store.

        Raises:
            StoreCorrupt: its evaluation is missing or not the bytes the entry names.
        """
        _, seq = run.state.requests[request]
        entries = self.store.entries(run.run)
        entry = entries[seq]
        named = str(entry.body.get("evaluation"))
        raw = self.store.evaluation(run.run, named)
        if raw is None or tagged_sha256(EVALUATION_SCHEMA, raw) != named:
            raise STORE_CORRUPT(f"run {run.run} entry {seq}: its evaluation is not stored intact")
        state = history.replay(run.scenario, entries[: seq + 1])
        return Committed(entry, read_own(raw), LoadedRun(run.scenario, state))

    def status(self, run: LoadedRun) -> dict[str, Any]:
        """The head and what it implies (``factory.gate-status/1``)."""
        return status_view(run)


def _what_differs(stored: Any, asked: Ask) -> str:
    if not isinstance(stored, dict):
        return "a candidate without a recorded ask (not a 'factory gate evaluate --request')"
    want = asked.to_json_value()
    names = {"submit": "submitted other evidence", "open": "opened other stages",
             "acquire": "acquired bound evidence" if stored.get("acquire") else
             "did not acquire (--no-acquire)"}  # fmt: skip
    differs = [text for key, text in names.items() if stored.get(key) != want[key]]
    return "a request that " + (" and ".join(differs) or "asked something else")


def _detached(state: history.RunState) -> history.RunState:
    return replace(state, requests=dict(state.requests))


def _check_params(scenario: Scenario, params: Mapping[str, str]) -> None:
    missing = sorted(set(scenario.params) - set(params))
    extra = sorted(set(params) - set(scenario.params))
    if missing or extra:
        what = (
            f"lacks --param {missing[0]}=…" if missing else f"does not declare param {extra[0]!r}"
        )
        raise PARAMS_INVALID(f"scenario {scenario.id} {what}")
    for name, value in params.items():
        if not isinstance(value, str) or not value or len(value) > MAX_PARAM or "\0" in value:
            raise PARAMS_INVALID(
                f"param {name}: a non-empty string of at most {MAX_PARAM} characters"
            )


def status_view(run: LoadedRun) -> dict[str, Any]:
    scenario, state = run.scenario, run.state
    return GateStatus(
        run=state.run,
        scenario=ScenarioRef(id=scenario.id, spec_hash=scenario.spec_hash),
        params=dict(state.params),
        head=Head(seq=state.seq, hash=state.head),
        completed=state.scenario_completed,
        stages={sid: state.stage_state(scenario, sid) for sid in scenario.order},
        intents=[{**i, "status": "eligible-for-dispatch"} for i in state.intents],
        settled=list(run.settled),
    ).to_json_value()

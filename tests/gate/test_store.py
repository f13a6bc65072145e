"""The SQLite store: compare-and-swap acceptance, idempotent replay, conflicting reuse,
two processes racing from one head, unknown commit outcomes, corruption found on load."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factory.gate.errors import (
    EvidenceConflict,
    RequestConflict,
    RunConflict,
    RunMissing,
    StoreCorrupt,
    StoreFailure,
)
from factory.gate.service import Ask, Gate
from factory.gate.store import SqliteStore
from tests.gate.helpers import NOW, condition, new_gate, observation, scenario, started


def two_stage() -> Any:
    stages = [{"id": "a", "complete": "c1"}, {"id": "b", "after": "a", "complete": "c2"}]
    return scenario([condition("c1"), condition("c2")], stages, completion="b")


def test_start_replays_and_conflicts(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    _, created = gate.start("r1", sc, {})
    again, created_again = gate.start("r1", sc, {})
    assert created and not created_again and again.state.seq == 0
    with pytest.raises(RunConflict):
        gate.start("r1", scenario([condition("c1")]), {})
    with pytest.raises(RunMissing):
        gate.load("nope")


def test_commit_then_stale_then_rederive(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    gate.submit(run, "e1", observation("c1", 0))
    first = gate.derive(run)
    second = gate.derive(run, now=NOW + 1)
    won = gate.accept(run, first)
    assert won.outcome == "committed" and won.seq == 1 and won.run is not None
    lost = gate.accept(run, second)
    assert (lost.outcome, lost.seq, lost.head) == ("stale", 1, won.head)
    fresh = gate.load("r1")
    assert fresh.state.completed == {"a"}
    rederived = gate.accept(fresh, gate.derive(fresh, now=NOW + 1))
    assert rederived.outcome == "committed" and rederived.seq == 2


def test_same_request_and_candidate_replays_even_after_the_head_moved(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    cand = gate.derive(run)
    first = gate.accept(run, cand, "req-1")
    assert first.run is not None
    gate.accept(first.run, gate.derive(first.run, now=NOW + 5))  # head moves on
    replay = gate.accept(run, cand, "req-1")
    assert (replay.outcome, replay.seq, replay.head) == ("replayed", 1, first.head)
    with pytest.raises(RequestConflict):
        gate.accept(run, gate.derive(run, now=NOW + 9), "req-1")


def test_an_identical_ask_that_lost_the_race_replays_and_another_ask_conflicts(
    tmp_path: Path,
) -> None:
    # Two identical retries loaded the same head; the later one derives another candidate
    # (another time), finds the request committed by the first and replays it.
    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    gate.submit(run, "e1", observation("c1", 0))
    ask = Ask.of(submitted=["ab"], opens=[], acquire=True)
    first = gate.accept(run, gate.derive(run), "req-1", asked=ask)
    assert first.outcome == "committed" and first.run is not None
    late = gate.accept(run, gate.derive(run, now=NOW + 5), "req-1", asked=ask)
    assert (late.outcome, late.seq, late.head) == ("replayed", 1, first.head)
    assert gate.prior(first.run, "req-1", ask) is not None
    other = Ask.of(submitted=["ab", "cd"], opens=[], acquire=True)
    with pytest.raises(RequestConflict, match="already accepted another candidate"):
        gate.accept(run, gate.derive(run, now=NOW + 9), "req-1", asked=other)
    with pytest.raises(RequestConflict, match="submitted other evidence"):
        gate.prior(first.run, "req-1", other)
    plain = gate.accept(first.run, gate.derive(first.run), "req-2")  # records no ask
    assert plain.outcome == "committed" and plain.run is not None
    with pytest.raises(RequestConflict, match="without a recorded ask"):
        gate.prior(plain.run, "req-2", ask)  # no retry can be shown identical to it
    with pytest.raises(RequestConflict):
        gate.accept(run, gate.derive(run, now=NOW + 9), "req-2", asked=ask)
    assert len(gate.store.entries("r1")) == 3  # start, req-1, req-2: nothing else written


def test_evidence_replay_and_conflict(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    _, stored = gate.submit(run, "e1", observation("c1", 0))
    _, again = gate.submit(run, "e1", observation("c1", 0))
    assert stored and not again
    with pytest.raises(EvidenceConflict):
        gate.submit(run, "e1", observation("c1", 1))


def test_history_is_append_only(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    gate.submit(started(gate, sc), "e1", observation("c1", 0))
    db = sqlite3.connect(tmp_path / "gate.sqlite3")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE entries SET body = x'00'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("DELETE FROM evidence")


def _tamper(path: Path, sql: str, *params: Any) -> None:
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER entries_no_update")
    db.execute(sql, params)
    db.commit()
    db.close()


def test_a_rewritten_entry_is_found_on_load(tmp_path: Path) -> None:
    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    gate.submit(run, "e1", observation("c1", 0))
    gate.accept(run, gate.derive(run))
    gate.store.close()
    body = {
        "kind": "accept",
        "request": "x",
        "candidate": "x",
        "evaluation": "x",
        "delta": {"complete": ["a", "b"], "open": [], "scenario_complete": True, "intents": []},
    }
    _tamper(
        tmp_path / "gate.sqlite3",
        "UPDATE entries SET body=? WHERE seq=1",
        json.dumps(body).encode(),
    )
    with pytest.raises(StoreCorrupt, match="hash does not match"):
        new_gate(tmp_path).load("r1")


def test_a_law_breaking_history_with_a_valid_chain_is_corrupt(tmp_path: Path) -> None:
    from factory.gate.state import make_entry

    gate, sc = new_gate(tmp_path), two_stage()
    run = started(gate, sc)
    body = {
        "kind": "accept",
        "request": "x",
        "candidate": "x",
        "evaluation": "x",
        "delta": {"complete": ["b"], "open": [], "scenario_complete": False, "intents": []},
    }
    forged = make_entry("r1", 1, run.state.head, body)
    gate.store.append("r1", run.state.head, forged, b"{}", "x")
    with pytest.raises(StoreCorrupt, match="prerequisites"):
        gate.load("r1")


class _LosingCommit:
    """A connection whose COMMIT raises after (or instead of) really committing."""

    def __init__(self, real: sqlite3.Connection, commit_first: bool) -> None:
        self.real, self.commit_first, self.armed = real, commit_first, False

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self.armed and sql == "COMMIT":
            self.armed = False
            if self.commit_first:
                self.real.execute(sql)
            else:
                self.real.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self.real.execute(sql, params)

    def close(self) -> None:
        self.real.close()


@pytest.mark.parametrize(
    ("commit_first", "settled"), [(True, "committed"), (False, "not-committed")]
)
def test_commit_outcome_unknown_is_said_and_settled_on_next_load(
    tmp_path: Path, commit_first: bool, settled: str
) -> None:
    holder: list[_LosingCommit] = []

    def connect(path: str) -> Any:
        holder.append(_LosingCommit(sqlite3.connect(path, isolation_level=None), commit_first))
        return holder[-1]

    gate = Gate(SqliteStore(tmp_path / "gate.sqlite3", connect=connect), clock=lambda: NOW)
    run = started(gate, two_stage())
    cand = gate.derive(run)
    holder[0].armed = True
    result = gate.accept(run, cand, "req-9")
    assert (result.outcome, result.run) == ("unknown", None)
    gate.store.close()
    later = new_gate(tmp_path).load("r1")
    assert [(d["request"], d["outcome"]) for d in later.settled] == [("req-9", settled)]
    assert later.state.seq == (1 if commit_first else 0)
    assert new_gate(tmp_path).load("r1").settled == ()  # settled once, then forgotten


RACER = """
import sys
from factory.gate.service import Ask, Gate
from factory.gate.store import SqliteStore
gate = Gate(SqliteStore(__import__('pathlib').Path(sys.argv[1])))
run = gate.load("r1")
cand = gate.derive(run, now=int(sys.argv[2]))
print("ready", flush=True)
sys.stdin.readline()
print(gate.accept(run, cand).outcome, flush=True)
"""


def test_two_processes_accepting_from_one_head_exactly_one_commits(tmp_path: Path) -> None:
    gate = new_gate(tmp_path)
    started(gate, two_stage())
    gate.store.close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path / "gate.sqlite3"), str(NOW + i)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outcomes = sorted(proc.communicate(timeout=120)[0].strip() for proc in procs)
    assert outcomes == ["committed", "stale"]
    assert new_gate(tmp_path).load("r1").state.seq == 1


class _FullDisk:
    """A connection whose next INSERT fails as SQLite does when the disk is full."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real, self.armed = real, False

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self.armed and sql.lstrip().startswith("INSERT"):
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.real.execute(sql, params)

    def close(self) -> None:
        self.real.close()


def test_a_full_disk_during_submit_is_a_store_failure_and_records_nothing(
    tmp_path: Path,
) -> None:
    """Observed before (issue 24 §4): an internal error (exit 1). Now StoreFailure (4),
    the transaction rolled back; twin: the same submit with room is stored."""
    holder: list[_FullDisk] = []

    def connect(path: str) -> Any:
        holder.append(_FullDisk(sqlite3.connect(path, isolation_level=None)))
        return holder[-1]

    gate = Gate(SqliteStore(tmp_path / "gate.sqlite3", connect=connect), clock=lambda: NOW)
    run = started(gate, two_stage())
    holder[0].armed = True
    with pytest.raises(StoreFailure, match="disk is full"):
        gate.submit(run, "e1", observation("c1", 0))
    assert gate.store.evidence("r1") == []
    _, stored = gate.submit(run, "e1", observation("c1", 0))
    assert stored and len(gate.store.evidence("r1")) == 1

"""Instants whose UTC moment falls outside years 1–9999 are refused where they enter.

The text may look valid — ``0001-01-01T00:00:00+05:00`` is in year 0 at UTC and
``9999-12-31T23:59:59-05:00`` in year 10000 — yet no datetime can render it. Each entry
(a scenario operand, ``--now``, an evidence record's ``observed_at`` or value) is a table
row: just inside the range it is admitted and the run evaluates; just outside it is a
named refusal (exit 2), and an evidence record refused there cannot stall the run's later
evaluations. An observed *value* is checked against its condition's domain when evaluated,
so out of range it is the documented ``observation-outside-domain`` failure, not a crash.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest

from factory.gate.values import (
    INSTANT_MAX_NS,
    INSTANT_MIN_NS,
    OutsideDomain,
    format_instant,
    parse_instant,
)
from tests.gate.helpers import condition, observation, scenario_doc
from tests.support.cli import run_factory

INSIDE = (
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-05:00",
    "9999-12-31T23:59:59.999999999Z",
    "9999-12-31T23:59:59+05:00",
)
OUTSIDE = ("0001-01-01T00:00:00+05:00", "0001-01-01T04:59:59.999999999+05:00",
           "9999-12-31T23:59:59-05:00", "9999-12-31T19:00:00-05:00")  # fmt: skip
LATE = "9999-12-31T23:59:59Z"
NOW_OK = "2026-01-01T00:10:00Z"


def gate(*args: str) -> tuple[int, Any, str]:
    proc = run_factory(["gate", *args])
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr.decode()


def _start(tmp: Path, operand: str = LATE) -> tuple[int, str, str]:
    spec = tmp / "s.json"
    spec.write_text(json.dumps(scenario_doc([condition("when", "instant", "le", operand)])))
    db = str(tmp / "g.sqlite3")
    code, _, err = gate("start", "--scenario", str(spec), "--run", "r1", "--store", db)
    return code, err, db


def _evaluate(db: str, now: str = NOW_OK) -> tuple[int, Any, str]:
    return gate("evaluate", "--run", "r1", "--store", db, "--now", now)


def _submit(tmp: Path, db: str, payload: bytes) -> tuple[int, str]:
    path = tmp / "e.json"
    path.write_bytes(payload)
    code, _, err = gate("submit", "--run", "r1", "--id", "e1", str(path), "--store", db)
    return code, err


def _refused(code: int, err: str, name: str) -> None:
    assert code == 2 and name in err and "Traceback" not in err, err
    assert "outside years 0001–9999" in err, err


def test_the_bounds_are_the_first_and_last_renderable_nanoseconds() -> None:
    assert parse_instant("0001-01-01T00:00:00Z") == INSTANT_MIN_NS
    assert parse_instant("9999-12-31T23:59:59.999999999Z") == INSTANT_MAX_NS
    assert format_instant(INSTANT_MIN_NS) == "0001-01-01T00:00:00Z"
    assert format_instant(INSTANT_MAX_NS) == "9999-12-31T23:59:59.999999999Z"


def test_a_toml_offset_date_time_is_held_to_the_same_range() -> None:
    plus5 = _dt.timezone(_dt.timedelta(hours=5))
    assert parse_instant(_dt.datetime(1, 1, 1, tzinfo=_dt.UTC)) == INSTANT_MIN_NS
    with pytest.raises(OutsideDomain, match="outside years"):
        parse_instant(_dt.datetime(1, 1, 1, tzinfo=plus5))


@pytest.mark.parametrize("text", INSIDE)
def test_inside_an_operand_loads_and_evaluates(tmp_path: Path, text: str) -> None:
    code, err, db = _start(tmp_path, text)
    assert code == 0, err
    code, out, err = _evaluate(db)
    assert code == 3 and out["conditions"]["when"]["resolution"] == "missing", err


@pytest.mark.parametrize("text", OUTSIDE)
def test_outside_an_operand_is_a_scenario_refusal(tmp_path: Path, text: str) -> None:
    code, err, _ = _start(tmp_path, text)
    _refused(code, err, "gate-scenario-invalid")


@pytest.mark.parametrize("text", INSIDE)
def test_inside_now_evaluates(tmp_path: Path, text: str) -> None:
    _, _, db = _start(tmp_path)
    code, out, err = _evaluate(db, text)
    assert code == 3 and "Traceback" not in err, err
    assert parse_instant(out["now"]) == parse_instant(text)


@pytest.mark.parametrize("text", OUTSIDE)
def test_outside_now_is_a_params_refusal(tmp_path: Path, text: str) -> None:
    _, _, db = _start(tmp_path)
    code, _, err = _evaluate(db, text)
    _refused(code, err, "gate-params-invalid")


def _payloads(text: str) -> list[bytes]:
    """The instant as the record's ``observed_at`` and as its observed value."""
    return [observation("when", LATE, observed_at=text), observation("when", text)]


@pytest.mark.parametrize("text", INSIDE)
@pytest.mark.parametrize("field", [0, 1], ids=["observed_at", "value"])
def test_inside_evidence_is_admitted_and_later_evaluations_end(
    tmp_path: Path, text: str, field: int
) -> None:
    _, _, db = _start(tmp_path)
    code, err = _submit(tmp_path, db, _payloads(text)[field])
    assert code == 0, err
    for _ in range(2):
        code, out, err = _evaluate(db)
        assert code in (0, 3) and out["run"] == "r1" and "Traceback" not in err, err


@pytest.mark.parametrize("text", OUTSIDE)
def test_outside_observed_at_is_refused_and_the_run_still_evaluates(
    tmp_path: Path, text: str
) -> None:
    _, _, db = _start(tmp_path)
    code, err = _submit(tmp_path, db, _payloads(text)[0])
    _refused(code, err, "gate-evidence-refused")
    code, out, err = _evaluate(db)
    assert code == 3 and out["conditions"]["when"]["resolution"] == "missing", err
    _a_later_record_is_evaluated(tmp_path, db)


@pytest.mark.parametrize("text", OUTSIDE)
def test_an_outside_value_is_the_documented_outside_domain_failure(
    tmp_path: Path, text: str
) -> None:
    """A value is checked against its condition's domain when evaluated (design/gate.md):
    out of range it is ``observation-outside-domain`` (exit 4), never a crash, and a later
    record for the condition is evaluated as usual."""
    _, _, db = _start(tmp_path)
    code, err = _submit(tmp_path, db, _payloads(text)[1])
    assert code == 0, err
    for _ in range(2):
        code, out, err = _evaluate(db)
        assert code == 4 and "Traceback" not in err, err
        assert out["failures"][0]["code"] == "observation-outside-domain"
    _a_later_record_is_evaluated(tmp_path, db)


def _a_later_record_is_evaluated(tmp: Path, db: str) -> None:
    later = observation("when", NOW_OK, observed_at="2026-01-01T00:05:00Z")
    path = tmp / "later.json"
    path.write_bytes(later)
    code, _, err = gate("submit", "--run", "r1", "--id", "e2", str(path), "--store", db)
    assert code == 0, err
    code, out, err = _evaluate(db)
    assert code == 0 and out["conditions"]["when"]["resolution"] == "present", err

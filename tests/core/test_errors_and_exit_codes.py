"""The exit-code table and the error families (SPEC F-2, F-3)."""

from __future__ import annotations

import pytest

from factory.errors import (
    INTERNAL,
    INTERRUPTED,
    USAGE,
    Code,
    CorruptLog,
    ExitCode,
    FactoryError,
    Failure,
    IntegrityFailure,
    Interrupted,
    ProviderFailure,
    Refused,
    UsageError,
    exit_code_for,
    lookup,
)
from factory.fsio import OUTPUT_EXISTS, OutputExists
from factory.provider_api import PROVIDER_FAILED


def test_exit_code_table_is_exactly_the_spec() -> None:
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0,
        "INTERNAL": 1,
        "USAGE": 2,
        "REJECTED": 3,
        "FAILURE": 4,
        "INTERRUPTED": 130,
    }


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        (UsageError, 2),
        (Refused, 2),
        (OutputExists, 2),
        (Failure, 4),
        (IntegrityFailure, 4),
        (CorruptLog, 4),
        (ProviderFailure, 4),
        (Interrupted, 130),
        (FactoryError, 1),
    ],
)
def test_each_family_has_one_exit_code(family: type[FactoryError], expected: int) -> None:
    assert family.exit_code == expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (USAGE("x"), 2),
        (OUTPUT_EXISTS("x"), 2),
        (PROVIDER_FAILED("x"), 4),
        (INTERRUPTED("x"), 130),
        (INTERNAL("x"), 1),
        (FactoryError("x"), 1),
        (KeyboardInterrupt(), 130),
        (RuntimeError("bug"), 1),
        (ValueError("bug"), 1),
    ],
)
def test_exit_code_for_maps_each_family(error: BaseException, expected: int) -> None:
    assert exit_code_for(error) == expected


def test_the_code_not_the_call_site_decides_the_exit_code_and_the_advice() -> None:
    err = OUTPUT_EXISTS("r.json already exists")
    assert (err.code, err.exit_code, err.spec) == ("output-exists", ExitCode.USAGE, OUTPUT_EXISTS)
    assert err.message == f"r.json already exists; {OUTPUT_EXISTS.next_step}"
    assert err.fact == "r.json already exists"
    assert lookup("output-exists") is OUTPUT_EXISTS


def test_a_class_built_without_a_code_takes_its_default_or_refuses() -> None:
    assert FactoryError("bug").spec is INTERNAL
    assert OutputExists("x").spec is OUTPUT_EXISTS
    with pytest.raises(TypeError, match="needs a registered code"):
        Failure("no family default")  # twin: a family without a default of its own


def test_a_code_belongs_to_exactly_one_class() -> None:
    with pytest.raises(TypeError, match="belongs to OutputExists"):
        Refused("x", code=OUTPUT_EXISTS)


def test_defining_a_code_twice_or_without_advice_fails_at_import() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        Refused.define("output-exists", "choose a new path")
    with pytest.raises(ValueError, match="kebab-case"):
        Refused.define("Not_Kebab", "x")
    with pytest.raises(ValueError, match="one-line next step"):
        Refused.define("no-advice-given", " ")
    assert lookup("no-advice-given") is None  # nothing half-registered


def test_diagnostics_is_one_line_with_code_message_and_next_step() -> None:
    err = USAGE("factory digest: unrecognized arguments: --x")
    assert err.diagnostics() == (
        f"factory: usage: factory digest: unrecognized arguments: --x; {USAGE.next_step}"
    )
    assert "\n" not in err.diagnostics()
    assert str(err) == err.message


def test_a_code_prints_as_its_name() -> None:
    code: Code[FactoryError] = INTERNAL
    assert str(code) == "internal" and f"{code}" == "internal"

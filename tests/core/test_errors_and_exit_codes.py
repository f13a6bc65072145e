"""The exit-code table and the error families (SPEC F-2, F-3)."""

from __future__ import annotations

import re

import pytest

from factory import errors
from factory.errors import (
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
)
from factory.fsio import OutputExists


def test_exit_code_table_is_exactly_the_spec() -> None:
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0,
        "INTERNAL": 1,
        "USAGE": 2,
        "REJECTED": 3,
        "FAILURE": 4,
        "INTERRUPTED": 130,
    }
    assert errors.EXIT_REJECTED == 3


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (UsageError("x"), 2),
        (Refused("x"), 2),
        (OutputExists("x"), 2),
        (Failure("x"), 4),
        (IntegrityFailure("x"), 4),
        (CorruptLog("x"), 4),
        (ProviderFailure("x"), 4),
        (Interrupted("x"), 130),
        (FactoryError("x"), 1),
        (KeyboardInterrupt(), 130),
        (RuntimeError("bug"), 1),
        (ValueError("bug"), 1),
    ],
)
def test_exit_code_for_maps_each_family(error: BaseException, expected: int) -> None:
    assert exit_code_for(error) == expected


def test_family_not_call_site_decides_exit_code() -> None:
    # A code override changes the stable identifier, never the exit code.
    err = Refused("no", code="symlink-refused")
    assert err.code == "symlink-refused"
    assert exit_code_for(err) == ExitCode.USAGE


@pytest.mark.parametrize(
    "cls",
    [
        FactoryError,
        UsageError,
        Refused,
        Failure,
        IntegrityFailure,
        CorruptLog,
        ProviderFailure,
        Interrupted,
        OutputExists,
    ],
)
def test_default_codes_are_stable_kebab_case(cls: type[FactoryError]) -> None:
    assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", cls.default_code)
    assert cls("m").code == cls.default_code


def test_diagnostics_is_one_line_with_code_and_message() -> None:
    err = UsageError("give --root once", code="duplicate-flag")
    assert err.diagnostics() == "factory: duplicate-flag: give --root once"
    assert "\n" not in err.diagnostics()
    assert str(err) == "give --root once"

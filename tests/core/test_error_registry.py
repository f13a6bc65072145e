"""The full list of error codes is a reviewed snapshot (SPEC F-2, F-3).

Every module of ``factory`` and ``providers`` is imported, so every code is registered,
then the registry is compared with ``golden/error-codes.tsv`` (code, class, exit code,
next step). Adding, renaming or re-homing a code, or changing its advice, changes that
file in the same commit. Regenerate it with ``FACTORY_UPDATE_GOLDEN=1 pytest <this file>``
and review the diff.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

import factory
import providers
from factory.errors import Code, registered

GOLDEN = Path(__file__).parent / "golden" / "error-codes.tsv"
HEADER = "code\tclass\texit\tnext step"


def _import_everything() -> None:
    for package in (factory, providers):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)


def _row(code: Code[object]) -> str:  # type: ignore[type-var]
    cls = code.error
    return (
        f"{code.name}\t{cls.__module__}.{cls.__qualname__}\t{int(code.exit_code)}\t{code.next_step}"
    )


def test_the_error_code_list_is_the_reviewed_snapshot() -> None:
    _import_everything()
    text = "\n".join([HEADER, *(_row(c) for c in registered())]) + "\n"
    if os.environ.get("FACTORY_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_every_code_is_kebab_case_one_line_and_in_one_family() -> None:
    _import_everything()
    codes = registered()
    assert len({c.name for c in codes}) == len(codes)
    for code in codes:
        assert "\t" not in code.next_step and "\n" not in code.next_step
        assert int(code.exit_code) in (1, 2, 4, 130)  # 0 and 3 are outcomes, never errors

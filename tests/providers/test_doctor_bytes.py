"""The ``factory.doctor/1`` report keeps its exact bytes (issue 10 §1), pinned in
``golden/`` (the fake CLIs' folder and the temporary folder become placeholders)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers import Effects
from providers.doctor import diagnose
from providers.resolve import CHECKOUT
from tests.support.fake_cli import Fakes
from tests.support.golden import assert_golden, placeholders

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("mode", ["ready", "not-logged-in"])
async def test_doctor_report_bytes(fakes: Fakes, tmp_path: Path, mode: str) -> None:
    if mode != "ready":
        fakes.mode(claude=mode, codex=mode)
    # Only PATH and HOME from outside: a caller's set ANTHROPIC_API_KEY would show up in
    # ignored_env, which is right for a user and wrong for a pin.
    environ = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    report = await diagnose(Effects(environ=environ, fallback_dirs=()))
    data = placeholders(report.canonical(), fakebin=fakes.bin, tmp=tmp_path, checkout=CHECKOUT)
    assert_golden(GOLDEN / f"doctor-{mode}.json", data)


async def test_doctor_report_bytes_without_binaries(tmp_path: Path) -> None:
    report = await diagnose(Effects(environ={"PATH": str(tmp_path)}, fallback_dirs=()))
    data = placeholders(report.canonical(), tmp=tmp_path, checkout=CHECKOUT)
    assert_golden(GOLDEN / "doctor-not-found.json", data)

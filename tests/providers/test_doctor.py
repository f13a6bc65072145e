"""``factory doctor`` (issue 4): binaries, versions, logins, Codex's read-only sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from providers import Effects
from providers.doctor import diagnose, pinned_versions
from providers.resolve import CHECKOUT
from tests.support.cli import run_factory
from tests.support.fake_cli import Fakes


def _doctor(fakes: Fakes) -> tuple[int, dict[str, object], str]:
    proc = run_factory(["doctor"], env=dict(os.environ), timeout=60)
    assert proc.stdout.count(b"\n") == 1, proc.stdout  # one canonical JSON line
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


def test_doctor_reports_a_ready_setup(fakes: Fakes) -> None:
    rc, report, err = _doctor(fakes)
    assert rc == 0 and report["schema"] == "factory.doctor/1"
    claude = report["profiles"]["claude"]  # type: ignore[index]
    codex = report["profiles"]["codex"]  # type: ignore[index]
    assert claude["binary"]["path"] == str(fakes.bin / "claude")
    assert claude["binary"]["via"] == "PATH"
    assert claude["version"] == "2.1.332 (Claude Code)" and claude["matches_pin"] is True
    assert claude["login"]["present"] is True and claude["problems"] == []
    assert codex["version"] == "codex-cli 0.171.0" and codex["login"]["present"] is True
    assert codex["sandbox"] == {"read_only_works": True, "detail": "read allowed, write refused"}
    assert report["routes"] == {"rehearsal": True, "subscription": True}
    assert "factory doctor" in err and "subscription route ready: yes" in err
    sandbox_runs = fakes.records("sandbox")
    assert len(sandbox_runs) == 2 and all("CODEX_HOME" in r["env"] for r in sandbox_runs)  # type: ignore[operator]


def test_doctor_reports_missing_logins_and_a_broken_sandbox(fakes: Fakes) -> None:
    fakes.mode(claude="not-logged-in", codex="sandbox-broken")
    rc, report, err = _doctor(fakes)
    assert rc == 0
    claude = report["profiles"]["claude"]  # type: ignore[index]
    codex = report["profiles"]["codex"]  # type: ignore[index]
    assert claude["login"]["present"] is False and claude["problems"]
    assert codex["sandbox"]["read_only_works"] is False
    assert report["routes"] == {"rehearsal": False, "subscription": False}
    assert "no subscription login" in err and "read-only sandbox" in err


def test_doctor_reports_codex_not_logged_in(fakes: Fakes) -> None:
    fakes.mode(codex="not-logged-in")
    _, report, _ = _doctor(fakes)
    codex = report["profiles"]["codex"]  # type: ignore[index]
    assert codex["login"] == {"present": False, "method": None, "detail": "Not logged in"}
    assert report["routes"] == {"rehearsal": True, "subscription": False}


async def test_doctor_reports_binaries_not_found(tmp_path: Path) -> None:
    report = (
        await diagnose(Effects(environ={"PATH": str(tmp_path)}, fallback_dirs=()))
    ).to_json_value()
    for name in ("claude", "codex"):
        entry = report["profiles"][name]
        assert entry["binary"] is None and entry["version"] is None
        assert entry["problems"][0].startswith("provider-not-found")
    assert report["routes"] == {"rehearsal": False, "subscription": False}


def test_pins_come_from_package_json() -> None:
    pins = pinned_versions()
    assert pins == {"claude": "2.1.332", "codex": "0.171.0"}


@pytest.mark.skipif(
    not (CHECKOUT / "node_modules" / ".bin" / "claude").exists(),
    reason="pinned CLIs not installed in this checkout (run scripts/setup)",
)
async def test_doctor_on_the_pinned_real_clis(tmp_path: Path) -> None:
    report = (
        await diagnose(Effects(environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}))
    ).to_json_value()
    for name in ("claude", "codex"):
        entry = report["profiles"][name]
        assert entry["binary"]["via"] == "checkout" and entry["matches_pin"] is True
        assert entry["login"]["present"] is False  # empty HOME: no login store

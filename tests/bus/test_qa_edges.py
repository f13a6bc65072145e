"""Edges found in review (issue 3 QA): a log path that is not a regular file, an unusable
lock, and verb texts whose event line would not fit the log. Each refusal has a twin that
succeeds."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from factory.bus.limits import MAX_TEXT_JSON_BYTES
from factory.bus.log import LOCK_NAME, LOG_NAME, MAX_LINE_BYTES, EventLog, fixed_point
from factory.bus.verify import verify
from factory.errors import CorruptLog, ExitCode, Failure
from tests.bus.helpers import bus, call, lines, rich_log
from tests.support.cli import run_factory


def _symlink(d: Path) -> None:
    rich_log(d.parent / "elsewhere")
    os.symlink(d.parent / "elsewhere" / LOG_NAME, d / LOG_NAME)


NOT_REGULAR: dict[str, Callable[[Path], None]] = {
    "symlink": _symlink,
    "folder": lambda d: (d / LOG_NAME).mkdir(),
    "FIFO": lambda d: os.mkfifo(d / LOG_NAME),
}


@pytest.mark.parametrize("kind", list(NOT_REGULAR))
def test_a_log_that_is_not_a_regular_file_is_refused_never_followed(
    tmp_path: Path, kind: str
) -> None:
    d = tmp_path / "bus"
    d.mkdir()
    NOT_REGULAR[kind](d)
    for attempt in (lambda: bus(d).state(), lambda: verify(d), lambda: fixed_point(d)):
        with pytest.raises(CorruptLog) as caught:
            attempt()  # a FIFO would block here forever if it were opened for reading
        assert caught.value.code == "log-not-regular"
    is_error, payload = call_raw(bus(d), "heartbeat", {"actor": "act-0001"})
    assert is_error and payload["error"] == "log-not-regular"
    if kind == "symlink":
        assert len(lines(tmp_path / "elsewhere")) == 9  # the target got nothing appended


def call_raw(log: EventLog, verb: str, args: dict[str, object]) -> tuple[bool, dict[str, object]]:
    from factory.bus.server import handle_call

    return handle_call(log, verb, args)


def test_cli_on_a_fifo_log_exits_4_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LOG_NAME)
    for argv in (["heartbeat", "--actor", "act-0001"], ["verify"], ["serve"]):
        proc = run_factory(["bus", *argv, "--data-dir", str(tmp_path)], timeout=30)
        assert proc.returncode == ExitCode.FAILURE, (argv, proc.stderr)
        assert b"log-not-regular" in proc.stderr and proc.stdout == b""


def test_negative_control_a_regular_log_opens_verifies_and_appends(tmp_path: Path) -> None:
    log = rich_log(tmp_path)
    assert verify(tmp_path, as_evidence=True).ok
    assert fixed_point(tmp_path).events == 9
    call(log, "heartbeat", actor="act-0001")
    assert len(lines(tmp_path)) == 10


def test_a_lock_path_that_cannot_be_opened_is_a_typed_failure(tmp_path: Path) -> None:
    rich_log(tmp_path)
    os.unlink(tmp_path / LOCK_NAME)
    (tmp_path / LOCK_NAME).mkdir()
    before = (tmp_path / LOG_NAME).read_bytes()
    with pytest.raises(Failure) as caught:
        bus(tmp_path).state()
    assert caught.value.code == "bus-lock-unusable"
    proc = run_factory(["bus", "heartbeat", "--data-dir", str(tmp_path), "--actor", "act-0001"])
    assert proc.returncode == ExitCode.FAILURE and b"bus-lock-unusable" in proc.stderr
    assert (tmp_path / LOG_NAME).read_bytes() == before
    (tmp_path / LOCK_NAME).rmdir()  # negative control: a plain lock file works
    assert bus(tmp_path).state().events == 9


BIG = {
    "emoji text (16,384 characters, 64 KiB)": ("send", "text", "\U0001f600" * 16_384),
    "control characters (each escaped to 6 bytes)": ("send", "text", "\x01" * 16_384),
    "emoji summary": ("handoff", "summary", "\U0001f600" * 16_384),
}


@pytest.mark.parametrize("name", list(BIG))
def test_a_text_too_large_for_one_line_is_rejected_on_the_record(tmp_path: Path, name: str) -> None:
    verb, field, text = BIG[name]
    log = rich_log(tmp_path)
    is_error, payload = call_raw(log, verb, {"from": "act-0002", "to": "act-0003", field: text})
    assert is_error and payload["error"] == "invalid-arguments" and payload["fields"] == [field]
    last = lines(tmp_path)[-1]
    assert last["type"] == "command.rejected" and last["fields"] == [field]


def test_negative_control_the_largest_admissible_text_is_recorded(tmp_path: Path) -> None:
    log = rich_log(tmp_path)
    text = "\U0001f600" * ((MAX_TEXT_JSON_BYTES - 2) // 4)  # the byte budget, quotes included
    words = [f"w{i:02d}" + "x" * 28 for i in range(16)]  # 16 denied 31-character words
    args = {"from": "act-0001", "to": "act-0002", "text": text, "kind": "k" * 32}
    sent = call(log, "send", **args, requestedAuthority=words)
    assert sent["authority"]["denied"] == words
    raw = (tmp_path / LOG_NAME).read_bytes().splitlines()
    sent_line = next(x for x in raw if b'"message.sent"' in x and text.encode() in x)
    assert MAX_LINE_BYTES - 4096 < len(sent_line) <= MAX_LINE_BYTES
    assert json.loads(sent_line)["message"]["text"] == text
    summary = "\U0001f600" * ((MAX_TEXT_JSON_BYTES - 2) // 4)
    handed = call(log, "handoff", **{"from": "act-0002", "to": "act-0003", "summary": summary})
    assert handed["authorityTransferred"] == []
    assert verify(tmp_path, as_evidence=True).ok


def _flip_history(data: bytes) -> bytes:
    i = data.index(b"coordinator")
    return data[:i] + b"coordinatoR" + data[i + 11 :]  # same size, still a valid event


def _same_size_keep_mtime(path: Path) -> None:
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.write(_flip_history(path.read_bytes()))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime restored; ctime cannot be


def _truncate_and_regrow(path: Path) -> None:
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(_flip_history(data) + data.splitlines(keepends=True)[-1])


def _replace_by_rename(path: Path) -> None:
    (path.parent / "new").write_bytes(path.read_bytes())  # identical bytes, new inode
    os.rename(path.parent / "new", path)


CACHE_ATTACKS: dict[str, Callable[[Path], None]] = {
    "same-size rewrite, mtime put back with utime": _same_size_keep_mtime,
    "truncate and regrow with changed history": _truncate_and_regrow,
    "replaced by rename (identical bytes)": _replace_by_rename,
}


@pytest.mark.parametrize("name", list(CACHE_ATTACKS))
def test_a_log_changed_under_a_warm_cache_is_refused_by_that_process(
    tmp_path: Path, name: str
) -> None:
    warm = rich_log(tmp_path)
    warm.state()
    assert warm.stats["cached"] > 0  # the cache is in use before the change
    CACHE_ATTACKS[name](tmp_path / LOG_NAME)
    changed = (tmp_path / LOG_NAME).read_bytes()
    for _ in range(2):  # and it keeps refusing
        with pytest.raises(CorruptLog) as caught:
            warm.state()
        assert caught.value.code == "log-rewritten"
        is_error, payload = call_raw(warm, "heartbeat", {"actor": "act-0001"})
        assert is_error and payload["error"] == "log-rewritten"
    assert (tmp_path / LOG_NAME).read_bytes() == changed  # nothing appended


def test_negative_control_identical_bytes_rewritten_in_place_are_accepted(tmp_path: Path) -> None:
    warm = rich_log(tmp_path)
    path = tmp_path / LOG_NAME
    data = path.read_bytes()
    with open(path, "r+b") as f:  # same inode, same bytes: nothing validated changed
        f.truncate(0)
        f.write(data)
    call(warm, "heartbeat", actor="act-0001")
    assert warm.stats["tail"] == 1  # re-proven by hashing, not trusted from the stat tuple
    assert path.read_bytes().startswith(data)


@pytest.mark.parametrize("reader", ["open", "verify"])
def test_a_giant_line_is_refused_without_being_held_in_memory(tmp_path: Path, reader: str) -> None:
    import tracemalloc

    rich_log(tmp_path)
    with open(tmp_path / LOG_NAME, "ab") as f:
        f.write(b"x" * 16_000_000)  # a garbage tail with no LF: 16 MB in one "line"
    tracemalloc.start()
    try:
        if reader == "open":
            with pytest.raises(CorruptLog) as caught:
                EventLog(tmp_path).state()
            assert caught.value.code == "line-too-long"
        else:
            report = verify(tmp_path).to_json_value()
            replays = next(c for c in report["checks"] if c["id"] == "log-replays")
            assert replays["detail"].startswith("line-too-long")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, peak  # bounded by the line limit, not by the file


def test_negative_control_a_line_at_the_limit_is_read_whole() -> None:
    import io

    from factory.bus.log import iter_lines, read_lines

    at_limit = b"x" * MAX_LINE_BYTES + b"\n"
    assert [line for _, line in iter_lines(read_lines(io.BytesIO(at_limit * 2)))] == [
        at_limit[:-1]
    ] * 2
    short_torn = b"x" * MAX_LINE_BYTES  # at the limit but no LF: a torn tail, by name
    with pytest.raises(CorruptLog) as caught:
        list(iter_lines(read_lines(io.BytesIO(short_torn))))
    assert caught.value.code == "torn-tail"


def test_a_byte_order_mark_is_named_bad_json(tmp_path: Path) -> None:
    rich_log(tmp_path)
    (tmp_path / LOG_NAME).write_bytes(b"\xef\xbb\xbf" + (tmp_path / LOG_NAME).read_bytes())
    with pytest.raises(CorruptLog) as caught:
        EventLog(tmp_path).state()
    assert caught.value.code == "bad-json"

"""The supervised runner (SPEC P-1) against real processes."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import trio
import trio.testing

from factory.proc import MIB, ProcessFailure, RunSpec, run
from factory.proc.procfs import become_subreaper
from tests.proc.helpers import PY, TREE, recorded, survivors
from tests.support.proc_tree import tree_size

ENV = {"PATH": "/usr/bin:/bin"}


async def test_trivial_child_exit_status_and_capture() -> None:
    res = await run(
        RunSpec(
            argv=[PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)"],
            env=ENV,
            timeout_s=10,
        )
    )
    assert res.exit_code == 7
    assert res.stdout == b"out\n" and res.stderr == b"err\n"
    assert res.stopped is None and not res.sweep.signalled
    assert 0 <= res.duration_ms < 10_000


async def test_stdin_bytes_are_written_then_closed() -> None:
    res = await run(RunSpec(argv=["/bin/cat"], env=ENV, timeout_s=10, stdin=b"prompt\x00bytes"))
    assert res.stdout == b"prompt\x00bytes" and res.exit_code == 0


async def test_no_stdin_means_dev_null() -> None:
    res = await run(RunSpec(argv=["/usr/bin/readlink", "/proc/self/fd/0"], env=ENV, timeout_s=10))
    assert res.stdout.strip() == b"/dev/null"


async def test_env_is_exactly_the_given_mapping() -> None:
    os.environ["FACTORY_TEST_LEAK"] = "leaked"
    try:
        res = await run(RunSpec(argv=["/usr/bin/env"], env={"ONLY": "this"}, timeout_s=10))
    finally:
        del os.environ["FACTORY_TEST_LEAK"]
    assert res.stdout == b"ONLY=this\n"


async def test_child_runs_in_its_own_session() -> None:
    res = await run(
        RunSpec(
            argv=[PY, "-c", "import os; print(os.getsid(0) == os.getpid())"], env=ENV, timeout_s=10
        )
    )
    assert res.stdout.strip() == b"True"


async def test_cwd_is_honoured(tmp_path: Path) -> None:
    res = await run(RunSpec(argv=["/bin/pwd"], env=ENV, timeout_s=10, cwd=tmp_path))
    assert res.stdout.strip() == str(tmp_path).encode()


async def test_output_exactly_at_cap_is_kept_whole() -> None:
    res = await run(
        RunSpec(
            argv=[PY, "-c", "import sys; sys.stdout.write('x' * 4096)"],
            env=ENV,
            timeout_s=10,
            stdout_cap=4096,
        )
    )
    assert len(res.stdout) == 4096 and not res.stdout_truncated


async def test_one_byte_over_cap_is_output_limit() -> None:
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(
                argv=[PY, "-c", "import sys; sys.stdout.write('x' * 4097)"],
                env=ENV,
                timeout_s=10,
                stdout_cap=4096,
            )
        )
    assert info.value.code == "output-limit"
    assert info.value.result is not None and info.value.result.stdout_truncated
    assert len(info.value.result.stdout) == 4096


async def test_fifty_megabyte_line_stops_at_default_cap(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    code = (
        "import json, os, sys, psutil\n"
        "me = [os.getpid(), psutil.Process().create_time()]\n"
        f"open({str(rec)!r}, 'w').write(json.dumps(me))\n"
        "sys.stdout.write('y' * (50 << 20) + '\\n')\n"
    )
    started = time.monotonic()
    with pytest.raises(ProcessFailure) as info:
        await run(RunSpec(argv=[PY, "-c", code], env=ENV, timeout_s=10, grace_s=0.5))
    assert info.value.code == "output-limit"
    assert info.value.result is not None and len(info.value.result.stdout) == MIB
    assert time.monotonic() - started < 5
    pid, created = json.loads(rec.read_text())
    assert survivors([(pid, created)]) == []


async def test_stderr_has_its_own_cap() -> None:
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(
                argv=[PY, "-c", "import sys; sys.stderr.write('e' * 3000)"],
                env=ENV,
                timeout_s=10,
                stderr_cap=1000,
            )
        )
    assert info.value.code == "output-limit"
    assert info.value.result is not None and info.value.result.stderr_truncated


async def test_launch_failure_is_typed(tmp_path: Path) -> None:
    with pytest.raises(ProcessFailure) as info:
        await run(RunSpec(argv=[str(tmp_path / "missing")], env=ENV, timeout_s=10))
    assert info.value.code == "launch-failed"


async def test_deadline_kills_sigterm_ignoring_reforking_tree(tmp_path: Path) -> None:
    rec = tmp_path / "tree.jsonl"
    started = time.monotonic()
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(argv=[PY, "-c", TREE, str(rec), "sleep"], env=ENV, timeout_s=1.5, grace_s=0.5)
        )
    elapsed = time.monotonic() - started
    assert info.value.code == "timeout"
    ids = recorded(rec)
    assert len(ids) >= 5  # leader, 2 children, 2 grandchildren at least
    assert survivors(ids) == []
    assert elapsed < 1.5 + 0.5 + 1.0
    assert info.value.result is not None and info.value.result.sweep.killed


async def test_leftover_descendants_are_killed_after_a_normal_exit(tmp_path: Path) -> None:
    rec = tmp_path / "tree.jsonl"
    res = await run(
        RunSpec(argv=[PY, "-c", TREE, str(rec), "exit"], env=ENV, timeout_s=10, grace_s=0.3)
    )
    assert res.exit_code == 0 and res.stdout == b"tree-built\n"
    assert res.sweep.signalled and res.sweep.killed
    ids = recorded(rec)
    assert len(ids) >= 5 and survivors(ids) == []


async def test_clean_exit_sends_no_signal() -> None:
    res = await run(RunSpec(argv=["/bin/true"], env=ENV, timeout_s=10))
    assert res.exit_code == 0 and not res.sweep.signalled


async def test_child_that_closes_stdout_and_keeps_running_hits_the_deadline() -> None:
    code = "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)\n"
    started = time.monotonic()
    with pytest.raises(ProcessFailure) as info:
        await run(RunSpec(argv=[PY, "-c", code], env=ENV, timeout_s=1.0, grace_s=0.5))
    assert info.value.code == "timeout"
    assert time.monotonic() - started < 1.0 + 0.5 + 1.0


async def test_child_reading_stdin_forever_gets_eof() -> None:
    # Reads until EOF: finishes at once because the runner closes stdin after the prompt.
    code = "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data))\n"
    res = await run(RunSpec(argv=[PY, "-c", code], env=ENV, timeout_s=5, stdin=b"abc"))
    assert res.stdout == b"3\n"


def test_same_child_with_an_open_stdin_would_hang() -> None:
    # Negative control for the test above: with stdin left open it never finishes.
    code = "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data))\n"
    proc = subprocess.Popen([PY, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.5)
    proc.kill()
    proc.wait()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.stdout.close()


async def test_cancellation_takes_the_same_path(tmp_path: Path) -> None:
    rec = tmp_path / "tree.jsonl"
    cancelled_at: list[float] = []

    async def cancel_once_built(scope: trio.CancelScope) -> None:
        while len(recorded(rec)) < tree_size():  # readiness: the whole tree exists
            await trio.sleep(0.02)
        cancelled_at.append(time.monotonic())
        scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_once_built, nursery.cancel_scope)
        await run(
            RunSpec(argv=[PY, "-c", TREE, str(rec), "sleep"], env=ENV, timeout_s=60, grace_s=0.3)
        )
    ids = recorded(rec)
    assert cancelled_at and len(ids) >= 3 and survivors(ids) == []  # gone before it escaped
    assert time.monotonic() - cancelled_at[0] < 0.3 + 5.0  # the grace, then the kill rounds


async def test_long_deadline_under_mock_clock(autojump_clock: trio.testing.MockClock) -> None:
    started = trio.current_time()
    real = time.monotonic()
    with pytest.raises(ProcessFailure) as info:
        await run(
            RunSpec(
                argv=["/bin/sleep", "600"], env=ENV, timeout_s=300, grace_s=5, track_interval_s=30
            )
        )
    assert info.value.code == "timeout"
    assert trio.current_time() - started >= 300
    assert time.monotonic() - real < 5


def test_factory_is_a_child_subreaper() -> None:
    assert become_subreaper()
    libc = ctypes.CDLL(None, use_errno=True)
    value = ctypes.c_int(0)
    assert libc.prctl(37, ctypes.byref(value), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    assert value.value == 1


CTRL_C_SCRIPT = r"""
import sys, trio
from factory.proc import RunSpec, run
async def main():
    await run(RunSpec(argv=[sys.executable, "-c", sys.argv[1], sys.argv[2], "sleep"],
                      env={"PATH": "/usr/bin:/bin"}, timeout_s=60, grace_s=float(sys.argv[3])))
try:
    trio.run(main)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_ctrl_c_kills_the_tree_before_exiting(tmp_path: Path) -> None:
    rec = tmp_path / "tree.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, TREE, str(rec), "0.3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    end = time.monotonic() + 10
    while len(recorded(rec)) < 5 and time.monotonic() < end:
        time.sleep(0.05)
    ids = recorded(rec)
    assert len(ids) >= 5, proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    assert out == b"interrupted\n"
    assert survivors(recorded(rec)) == []


async def test_concurrent_trees_do_not_take_each_other_down(tmp_path: Path) -> None:
    rec_a, rec_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    spec_b = RunSpec(
        argv=[PY, "-c", TREE, str(rec_b), "sleep"],
        env=ENV,
        timeout_s=60,
        grace_s=0.3,
        track_interval_s=0.05,
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, spec_b)
        with pytest.raises(ProcessFailure):
            await run(
                RunSpec(
                    argv=[PY, "-c", TREE, str(rec_a), "sleep"], env=ENV, timeout_s=1.0, grace_s=0.3
                )
            )
        assert survivors(recorded(rec_a)) == []
        ids_b = recorded(rec_b)
        assert len(ids_b) >= 5 and len(survivors(ids_b)) == len(ids_b)  # B untouched
        nursery.cancel_scope.cancel()
    assert survivors(recorded(rec_b)) == []


def _wait_until_frozen(ids: list[tuple[int, float]], deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while any(psutil.Process(pid).status() != psutil.STATUS_STOPPED for pid in survivors(ids)):
        assert time.monotonic() < end, "the first Ctrl-C froze nothing"
        time.sleep(0.02)


def _wait_for_records(rec: Path, count: int, deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while len(recorded(rec)) < count:
        assert time.monotonic() < end, f"{len(recorded(rec))} of {count} processes recorded"
        time.sleep(0.02)


def test_second_ctrl_c_during_cleanup_skips_the_grace_but_not_the_sweep(tmp_path: Path) -> None:
    rec = tmp_path / "tree.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, TREE, str(rec), "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    built = tree_size()
    _wait_for_records(rec, built)
    proc.send_signal(signal.SIGINT)
    # Readiness, not a pause: the first Ctrl-C freezes every member but the leader (which
    # then gets SIGTERM and its grace), so "all others stopped" proves it was handled.
    _wait_until_frozen(recorded(rec)[1:])
    assert proc.poll() is None  # first Ctrl-C: SIGTERM sent, waiting out the 30 s grace
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - started < 5, "the second Ctrl-C should end the grace"
    assert proc.returncode == 130 and out == b"interrupted\n", err
    assert survivors(recorded(rec)) == []

"""Bad input to ``factory agent`` and ``factory receipt`` gets its named error, never exit 1,
a hang or an end by signal (issue 8 §7). Real subprocesses; fake profiles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.errors import ExitCode
from tests.agent.cli_helpers import FAKE, agent_args
from tests.agent.scenarios import scenario
from tests.support.cli import run_factory
from tests.support.layout import Layout

SIGNALLER = Path(__file__).with_name("signal_factory.py")
ROOT = Path(__file__).resolve().parents[2]


def last_code(stderr: bytes) -> str:
    line = stderr.decode(errors="replace").strip().splitlines()[-1]
    assert line.startswith("factory: "), stderr
    return line.split(": ")[1]


def nothing_written(layout: Layout) -> bool:
    return not os.path.lexists(layout.receipt) and not os.path.lexists(layout.evidence)


# ---- the rehearsal scenario ------------------------------------------------------------------


def test_a_fifo_as_the_scenario_is_refused_at_once(layout: Layout, tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    proc = run_factory([*agent_args(layout), "--rehearsal", str(fifo)], timeout=60)
    assert time.monotonic() - started < 30  # it used to wait for a writer forever
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert last_code(proc.stderr) == "rehearsal-scenario-invalid"
    assert nothing_written(layout)


def test_twin_a_regular_scenario_file_is_read(layout: Layout, tmp_path: Path) -> None:
    """The same flags with a valid scenario file get past it: the refusal comes from the
    next check (the primary checkout is not a linked worktree)."""
    path = scenario(tmp_path, {"role": "worker", "final_message": "done"})
    args = agent_args(layout, "--rehearsal", str(path))
    args[args.index("--worktree") + 1] = str(layout.repo)
    proc = run_factory(args, timeout=60)
    assert proc.returncode == ExitCode.USAGE and last_code(proc.stderr) != (
        "rehearsal-scenario-invalid"
    )


@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_deeply_nested_scenario_is_invalid_not_a_crash(
    layout: Layout, tmp_path: Path, depth: int
) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(
        b'{"schema":"factory.rehearsal-scenario/1","invocations":'
        + b"[" * depth
        + b"]" * depth
        + b"}"
    )
    proc = run_factory([*agent_args(layout), "--rehearsal", str(path)], timeout=60)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert last_code(proc.stderr) == "rehearsal-scenario-invalid"
    assert b"Traceback" not in proc.stderr and nothing_written(layout)


# ---- a receipt nested too deeply -----------------------------------------------------------


@pytest.mark.parametrize("command", ["verify", "show"])
@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_deeply_nested_receipt_is_receipt_invalid(
    tmp_path: Path, command: str, depth: int
) -> None:
    path = tmp_path / "deep.receipt.json"
    path.write_bytes(b'{"schema":' + b"[" * depth + b"]" * depth + b"}\n")
    proc = run_factory(["receipt", command, str(path)], timeout=60)
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert last_code(proc.stderr) == "receipt-invalid"


# ---- arguments that are not UTF-8 ------------------------------------------------------------


@pytest.mark.parametrize(
    "flag", ["--task", "--out", "--evidence", "--worktree", "--rehearsal", "--otel-endpoint"]
)
def test_a_flag_that_is_not_utf8_is_refused_before_anything(layout: Layout, flag: str) -> None:
    extra = {"--rehearsal": str(layout.out / "s.json"), "--otel-endpoint": "http://127.0.0.1:9/"}
    more = [flag, extra[flag]] if flag in extra else []
    args: list[str | bytes] = list(agent_args(layout, "--evidence", str(layout.evidence), *more))
    i = args.index(flag) + 1
    args[i] = os.fsencode(args[i]) + b"\xff"  # argv bytes, as a shell passes them
    proc = subprocess.run(
        [sys.executable, "-m", "factory", *args],
        cwd=ROOT,
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert last_code(proc.stderr) == "argument-not-utf8"
    assert flag.encode() in proc.stderr.splitlines()[-1]
    assert nothing_written(layout)
    assert not list(layout.out.iterdir())  # not even a receipt under the odd name


def test_twin_a_non_ascii_utf8_task_runs(layout: Layout) -> None:
    args = agent_args(layout)
    args[args.index("--task") + 1] = "corrige la fonction add() — déjà vu"
    proc = subprocess.run(
        [sys.executable, str(FAKE), "approve", "--", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "corrige la fonction add() — déjà vu"


# ---- stdout on a full device -----------------------------------------------------------------


def test_agent_with_stdout_on_dev_full_exits_4_beside_a_completed_receipt(
    layout: Layout,
) -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, str(FAKE), "approve", "--", *agent_args(layout)],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("factory: output-write-failed: ") and "do not rerun" in last
    assert str(layout.receipt) in last
    assert json.loads(layout.receipt.read_bytes())["status"] == "completed"
    verified = run_factory(["receipt", "verify", str(layout.receipt)])
    assert verified.returncode == 0, verified.stderr


# ---- signals at completion, and a second SIGTERM --------------------------------------------


def _signalled(mode: str, layout: Layout, tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(SIGNALLER), mode, str(tmp_path / "marker"), "--", *agent_args(layout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("mode", ["int-at-completion", "int-before-stdout"])
def test_sigint_at_completion_exits_130_with_the_terminal_receipt(
    layout: Layout, tmp_path: Path, mode: str
) -> None:
    proc = _signalled(mode, layout, tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, err  # not -2: not ended by the signal
    assert out == layout.receipt.read_bytes()
    receipt = json.loads(out)
    assert receipt["status"] == "completed"  # it had completed: the record says so
    assert run_factory(["receipt", "verify", str(layout.receipt)]).returncode == 0


def test_a_second_sigterm_exits_130_with_the_interrupted_receipt(
    layout: Layout, tmp_path: Path
) -> None:
    proc = _signalled("term-twice", layout, tmp_path)
    marker = tmp_path / "marker"
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # the first; the helper sends the second later
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, err  # not -15
    assert out == layout.receipt.read_bytes()
    assert json.loads(out)["status"] == "interrupted"


@pytest.mark.parametrize("when", ["write", "teardown"])
@pytest.mark.parametrize("second", ["term", "int"])
def test_a_second_signal_while_the_run_completes_exits_130(
    layout: Layout, tmp_path: Path, second: str, when: str
) -> None:
    """The first SIGTERM interrupts the run; a second SIGTERM or SIGINT lands while the
    ``interrupted`` receipt is written (just before and just after the bytes), or in the
    interpreter's last teardown, after Python reset its signal handlers: the process is not
    ended by it (not -15 / -2), the exit is 130 and the terminal receipt is on stdout."""
    proc = _signalled(f"term-then-{second}-at-{when}", layout, tmp_path)
    marker = tmp_path / "marker"
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert out == layout.receipt.read_bytes()
    assert json.loads(out)["status"] == "interrupted"
    assert run_factory(["receipt", "verify", str(layout.receipt)]).returncode == 0


def test_twin_without_a_signal_the_same_run_exits_0(layout: Layout) -> None:
    proc = subprocess.run(
        [sys.executable, str(FAKE), "approve", "--", *agent_args(layout)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout == layout.receipt.read_bytes()


# ---- an operator receipt nested too deeply ---------------------------------------------------


@pytest.mark.parametrize("depth", [100_000, 10])
def test_a_deeply_nested_operator_receipt_is_invalid_not_a_crash(
    tmp_path: Path, depth: int
) -> None:
    """depth 10 is the twin: JSON the parser reads, refused by the schema with the same
    code; depth 100,000 used to escape as RecursionError (internal, exit 1)."""
    path = tmp_path / "deep.operator.json"
    path.write_bytes(b'{"schema":' + b"[" * depth + b"]" * depth + b"}\n")
    proc = run_factory(["operator", "verify", str(path)], timeout=60)
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert last_code(proc.stderr) == "operator-receipt-invalid"
    assert b"Traceback" not in proc.stderr


def _fsize_limited(limit: int) -> None:
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_reservation_that_cannot_be_written_leaves_nothing(layout: Layout) -> None:
    """Observed before (issue 24 §4): a full disk at the reservation was an internal error
    (exit 1) and left a partly written receipt. Now the claim is given back: exit 2,
    ``output-unwritable``, no receipt, no evidence. A file-size limit stands in for the
    full device (the same failed write); twin: the same run with room."""
    argv = [sys.executable, "-m", "factory", *agent_args(layout), "--rehearsal", "demo"]
    proc = subprocess.run(
        argv, capture_output=True, timeout=120, check=False,
        preexec_fn=lambda: _fsize_limited(10),
    )  # fmt: skip
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert last_code(proc.stderr) == "output-unwritable" and nothing_written(layout)
    twin = subprocess.run(argv, capture_output=True, timeout=300, check=False)
    assert twin.returncode == 0, twin.stderr[-2000:]
    assert json.loads(layout.receipt.read_bytes())["status"] == "completed"


def _approved(layout: Layout) -> None:
    proc = subprocess.run(
        [sys.executable, str(FAKE), "approve", "--", *agent_args(layout)],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_receipt_show_with_stdout_on_a_full_device_is_output_write_failed(
    layout: Layout, tmp_path: Path
) -> None:
    """Observed before (issue 24 §4): an internal error (exit 1) with a crash log. Now exit
    4, ``output-write-failed``; with ``--html`` the page is still written and named."""
    _approved(layout)
    page = tmp_path / "r.html"
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "factory", "receipt", "show", str(layout.receipt),
             "--html", str(page)],
            stdout=full, stderr=subprocess.PIPE, timeout=120, check=False,
        )  # fmt: skip
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert last_code(proc.stderr) == "output-write-failed" and str(page).encode() in proc.stderr
    assert page.read_bytes().startswith(b"<!DOCTYPE html>")
    twin = run_factory(["receipt", "show", str(layout.receipt)])  # a stdout with room
    assert twin.returncode == 0 and b"receipt intact" in twin.stdout


def test_a_lone_surrogate_escape_in_a_receipt_is_receipt_invalid(layout: Layout) -> None:
    """Observed before (issue 24 §4): an internal error when the revision was computed."""
    _approved(layout)
    data = layout.receipt.read_bytes()
    forged = layout.receipt.with_name("forged.json")
    forged.write_bytes(data.replace(b'"task":"', b'"task":"\\ud800', 1))
    for verb in ("verify", "show"):
        proc = run_factory(["receipt", verb, str(forged)])
        assert proc.returncode == ExitCode.FAILURE, proc.stderr
        assert last_code(proc.stderr) == "receipt-invalid" and b"surrogate" in proc.stderr
    assert run_factory(["receipt", "verify", str(layout.receipt)]).returncode == 0  # twin

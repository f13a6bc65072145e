"""``factory bus verify`` at a terminal shows what the sessions did (issue 28): actors,
messages and threads, acknowledgements, handoffs, refusals; the richness checks are "not
claimed as evidence", never failures, unless ``--as-evidence``. With ``--json`` or a
stdout that is not a terminal, the JSON report as before. Read through a real pty."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bus.helpers import bus, call, rich_log
from tests.support.cli import run_factory


def _at_a_terminal(*args: str) -> tuple[int, str]:
    main, child = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "factory", "bus", "verify", *args],
        stdout=child, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_what_the_sessions_did(tmp_path: Path) -> None:
    rich_log(tmp_path / "d")
    code, text = _at_a_terminal("--data-dir", str(tmp_path / "d"))
    assert code == 0, text
    assert text.startswith("Bus log ") and ": verifies\n" in text
    assert "3 actors: coord (coordinator, act-0001), builder (worker, act-0002)" in text
    assert "2 messages in 1 thread; 1 acknowledged; 1 handoff;" in text
    assert "{" not in text  # no JSON at a terminal
    twin = run_factory(["bus", "verify", "--data-dir", str(tmp_path / "d")])  # not a terminal
    assert json.loads(twin.stdout)["ok"] is True
    code, forced = _at_a_terminal("--data-dir", str(tmp_path / "d"), "--json")
    assert code == 0 and json.loads(forced)["format"] == "factory.bus-verification/1"


def test_richness_is_not_a_failure_unless_claimed_as_evidence(tmp_path: Path) -> None:
    log = bus(tmp_path / "d")
    call(log, "register", name="lone", kind="worker")
    code, text = _at_a_terminal("--data-dir", str(tmp_path / "d"))
    assert code == 0 and ": verifies\n" in text
    assert "not claimed as evidence; as evidence it would fall short of: actors-at-least-3" in text
    assert "1 actor: lone (worker, act-0001)" in text
    code, claimed = _at_a_terminal("--data-dir", str(tmp_path / "d"), "--as-evidence")
    assert code == 4 and "does NOT verify: actors-at-least-3" in claimed
    assert "as evidence (--as-evidence): does NOT hold" in claimed

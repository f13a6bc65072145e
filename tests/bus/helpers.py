"""Builders for bus logs in tests: real files, a fixed clock, the real reducer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from factory.bus.decide import decide
from factory.bus.log import LOG_NAME, EventLog
from factory.bus.model import VERB_INPUTS
from factory.bus.server import handle_call

AT = "2026-01-01T00:00:00.000Z"
REPO = Path(__file__).resolve().parents[2]


def fixed_clock() -> str:
    return AT


def bus(data_dir: Path) -> EventLog:
    data_dir.mkdir(parents=True, exist_ok=True)
    return EventLog(data_dir, clock=fixed_clock, lock_timeout_s=5)


def call(log: EventLog, verb: str, **args: Any) -> dict[str, Any]:
    """A verb through the same path the MCP tool uses; asserts it succeeded."""
    is_error, payload = handle_call(log, verb, args)
    assert not is_error, payload
    return payload


def command(log: EventLog, verb: str, args: dict[str, Any]) -> Any:
    """Decide and commit one verb directly (no denial echo)."""
    cmd = VERB_INPUTS[verb].model_validate(args)
    return log.commit(lambda state, at: decide(state, cmd, at))  # type: ignore[arg-type]


def rich_log(data_dir: Path) -> EventLog:
    """A log that passes every check with evidence claimed (the smoke's conversation)."""
    log = bus(data_dir)
    c = call(log, "register", name="coord", kind="coordinator")["ref"]
    b = call(log, "register", name="builder", kind="worker")["ref"]
    r = call(log, "register", name="reviewer", kind="reviewer")["ref"]
    sent = call(log, "send", **{"from": c, "to": b, "text": "task", "requestedAuthority": ["read"]})
    cor = sent["correlationId"]
    call(log, "inbox", actor=b)
    call(log, "ack", actor=b, messageId=sent["messageId"])
    call(log, "send", **{"from": b, "to": c, "text": "candidate", "correlationId": cor})
    call(log, "handoff", **{"from": b, "to": r, "summary": "review it", "correlationId": cor})
    call(log, "heartbeat", actor=r)
    return log


def lines(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (data_dir / LOG_NAME).read_bytes().splitlines()]


def write_lines(data_dir: Path, events: list[dict[str, Any]]) -> None:
    """Write events as canonical lines (for tampered-log fixtures)."""
    from factory.documents.canonical import canonical_bytes

    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / LOG_NAME).write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in events))


_APPENDER = """
import sys
from pathlib import Path
from factory.bus.log import EventLog
from factory.bus.server import handle_call

data_dir, me, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
log = EventLog(data_dir, lock_timeout_s=60)
sender = handle_call(log, "register", {"name": me, "kind": "worker"})[1]["ref"]
sink = handle_call(log, "register", {"name": "sink", "kind": "sink"})[1]["ref"]
for i in range(count):
    err, out = handle_call(log, "send", {"from": sender, "to": sink, "text": f"{me} {i}"})
    assert not err, out
    print(out["messageId"])
"""


def run_appenders(data_dir: Path, processes: int, count: int) -> list[str]:
    """Start ``processes`` writers at once; return every message id they were given."""
    data_dir.mkdir(parents=True, exist_ok=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(data_dir), f"w{n}", str(count)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(processes)
    ]
    ids: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err.decode()
        ids += out.decode().split()
    return ids

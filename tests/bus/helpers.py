"""Builders for bus logs in tests: real files, a fixed clock, the real reducer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factory.bus.decide import decide
from factory.bus.log import LOG_NAME, EventLog
from factory.bus.model import VERB_INPUTS
from factory.bus.server import handle_call

AT = "2026-01-01T00:00:00.000Z"


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
    from factory.canonical import canonical_bytes

    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / LOG_NAME).write_bytes(b"".join(canonical_bytes(e) + b"\n" for e in events))

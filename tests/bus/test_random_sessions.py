"""Random sessions: whatever callers send, the log replays to the live state and verifies."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from factory.bus.log import EventLog
from factory.bus.reducer import state_digest
from factory.bus.server import handle_call
from factory.bus.verify import verify
from tests.bus.helpers import bus


def _random_call(
    rng: random.Random, refs: list[str], msgs: list[str]
) -> tuple[str, dict[str, Any]]:

    def ref() -> str:
        return rng.choice([*refs, "act-0099", "nobody"]) if refs else "act-0001"

    def mid() -> str:
        return rng.choice([*msgs, "msg-0999"]) if msgs else "msg-0001"

    verb = rng.choice(
        ["register", "send", "send", "inbox", "ack", "ack", "handoff", "heartbeat", "bogus"]
    )
    if verb == "register":
        return verb, {"name": f"n{rng.randrange(6)}", "kind": rng.choice(["worker", "reviewer"])}
    if verb == "send":
        args: dict[str, Any] = {
            "from": ref(),
            "to": ref(),
            "text": rng.choice(["hi", "--x", "é\n\x00"]),
        }
        if rng.random() < 0.5:
            args["correlationId"] = f"cor-{rng.randrange(1, 12):04d}"
        if rng.random() < 0.3:
            args["requestedAuthority"] = rng.sample(["read", "merge", "report", "push"], 2)
        return verb, args
    if verb == "inbox":
        return verb, {"actor": ref(), "limit": rng.choice([1, 5, 0])}
    if verb == "ack":
        return verb, {"actor": ref(), "messageId": mid()}
    if verb == "handoff":
        return verb, {"from": ref(), "to": ref(), "summary": "s"}
    if verb == "heartbeat":
        return verb, {"actor": ref()}
    return verb, {"x": 1}


@pytest.mark.parametrize("seed", range(5))
def test_random_session_replays_to_the_live_state_and_verifies(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    log = bus(tmp_path)
    refs: list[str] = []
    msgs: list[str] = []
    outcomes = {True: 0, False: 0}
    for _ in range(150):
        verb, args = _random_call(rng, refs, msgs)
        is_error, payload = handle_call(log, verb, args)
        outcomes[is_error] += 1
        if not is_error and verb == "register":
            refs.append(payload["ref"])
        if not is_error and "messageId" in payload and verb in ("send", "handoff"):
            msgs.append(payload["messageId"])
    assert outcomes[True] and outcomes[False]  # both paths were exercised
    live = log.state()
    fresh = EventLog(tmp_path).state()
    assert state_digest(fresh) == state_digest(live)
    assert fresh.rejections == outcomes[True]
    report = verify(tmp_path).to_json_value()
    assert report["ok"], [c for c in report["checks"] if not c["ok"]]

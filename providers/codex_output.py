"""What Codex's output says (SPEC P-4), as pure functions of its bytes: the ``--json``
events (:func:`parse_events`), the verdict file ``-o`` validated by *us* against
:data:`VERDICT_SCHEMA` (:func:`parse_verdict`; the CLI does not validate it), and the
outcome code of a finished run (:func:`classify`). The profile that runs Codex is
:mod:`providers.codex`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from factory.documents.canonical import DuplicateKey, unique_keys
from factory.models import StrictModel
from factory.provider_api import (
    PROVIDER_AUTH_REQUIRED,
    PROVIDER_FAILED,
    PROVIDER_NETWORK,
    PROVIDER_PROTOCOL,
    Verdict,
)
from providers.common import Problem, iter_json_lines, stderr_tail

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES"]},
        "summary": {"type": "string"},
    },
    "required": ["verdict", "summary"],
    "additionalProperties": False,
}


class _VerdictDoc(StrictModel):
    verdict: Literal["APPROVE", "REQUEST_CHANGES"]
    summary: str


@dataclass(slots=True)
class Events:
    """What Codex's ``--json`` events said (pure parse of stdout)."""

    terminal: Literal["completed", "failed"] | None = None
    failure: str = ""
    reconnects: int = 0
    waiting_for_network: bool = False
    events: int = 0
    garbage_lines: int = 0


def parse_events(stdout: bytes | Iterable[bytes]) -> Events:
    """Parse Codex JSONL (bytes, or the lines of a spooled capture); the first
    ``turn.completed``/``turn.failed`` is terminal. Only what decides is kept."""
    out = Events()
    garbage = [0]
    for event in iter_json_lines(stdout, garbage):
        out.events += 1
        kind = event.get("type")
        if kind == "error":
            message = str(event.get("message", ""))
            if message.startswith("Reconnecting"):
                out.reconnects += 1
                out.waiting_for_network |= "waiting for network" in message
            elif not out.failure:
                out.failure = message
        elif kind in ("turn.completed", "turn.failed") and out.terminal is None:
            out.terminal = "completed" if kind == "turn.completed" else "failed"
            if kind == "turn.failed":
                err = event.get("error")
                msg = err.get("message") if isinstance(err, dict) else None
                out.failure = str(msg or out.failure or "turn failed")
    out.garbage_lines = garbage[0]
    return out


def parse_verdict(data: bytes) -> Verdict:
    """Validate the ``-o`` file against :data:`VERDICT_SCHEMA` (exactly two keys).

    Raises:
        ProviderFailure: ``provider-protocol`` for empty, non-JSON or non-conforming data,
            a duplicated key, or a summary that is not valid Unicode (lone surrogate).
    """
    if not data.strip():
        raise PROVIDER_PROTOCOL("codex wrote no verdict (empty -o file)")
    try:
        doc = json.loads(data, object_pairs_hook=unique_keys)
        parsed = _VerdictDoc.model_validate(doc)
        parsed.summary.encode("utf-8")  # a lone surrogate (\ud800) is not text
    except (ValueError, ValidationError, RecursionError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            reason = f"{first.get('msg', 'invalid')} at {where}" if where else "not a JSON object"
        elif isinstance(exc, DuplicateKey):
            reason = str(exc)
        elif isinstance(exc, UnicodeEncodeError):
            reason = "summary is not valid Unicode (lone surrogate)"
        elif isinstance(exc, RecursionError):
            reason = "nested too deeply"
        else:
            reason = "not JSON"
        raise PROVIDER_PROTOCOL(f"codex verdict violates the verdict schema: {reason}") from exc
    return Verdict(verdict=parsed.verdict, summary=parsed.summary)


def classify(events: Events, exit_code: int, stderr: bytes) -> Problem | None:
    """None when the turn completed, else ``(P-4 code, one-line message)``."""
    if events.terminal == "completed":
        if exit_code != 0:
            return PROVIDER_PROTOCOL, (
                f"codex exited {exit_code} after turn.completed: {stderr_tail(stderr)}"
            )
        return None
    if events.terminal == "failed":
        msg = events.failure[:200]
        low = msg.lower()
        if "401" in msg or "403" in msg or "unauthorized" in low or "not logged in" in low:
            return PROVIDER_AUTH_REQUIRED, (f"codex was refused by its API ({msg})")
        if "connection" in low or "network" in low or "stream disconnected" in low:
            return PROVIDER_NETWORK, f"codex could not reach its API: {msg}"
        return PROVIDER_FAILED, f"codex turn failed: {msg}"
    if b"Not logged in" in stderr:
        return PROVIDER_AUTH_REQUIRED, "codex is not logged in"
    if exit_code == 0:
        return PROVIDER_PROTOCOL, "codex exited 0 without a turn.completed event"
    return PROVIDER_FAILED, f"codex exited {exit_code}: {stderr_tail(stderr)}"

"""The tracer's reservation record, written before pydantic is imported (issue 25).

``factory smoke`` reserves its report, then claims the data dir, then spawns the bus
server; everything before the spawn delays the server's start-up, and importing pydantic
(with the report's models) took ~0.1 s of it. The ``running`` record therefore comes from
this stdlib-only function, with the document's constants defined here and used by the
model module (:mod:`factory.bus.smoke_report`) too. ``SmokeReservation(...).data()``
remains the document's model (the registry, the JSON Schema); a property test holds the
two byte-equal for every admitted request (tests/bus/test_smoke_reserve.py).
"""

from __future__ import annotations

from typing import Final

from factory.documents.canonical import canonical_bytes

REPORT_FORMAT: Final = "factory.smoke-report/1"
COMMAND: Final = "factory smoke"
EXECUTION: Final = "coordination-tracer; no code execution"


def reservation_bytes(data_dir: str, artifact: dict[str, object], task: str) -> bytes:
    """The ``running`` record: canonical JSON plus LF, as ``SmokeReservation.data()``.

    ``artifact`` is the artifact's JSON value (``path``, ``bytes``, ``sha256``); the texts
    were admitted as UTF-8 without lone surrogates (``factory.bus.smoke.admit``).
    """
    value = {
        "format": REPORT_FORMAT,
        "ok": False,
        "command": COMMAND,
        "execution": EXECUTION,
        "dataDir": data_dir,
        "artifact": artifact,
        "task": task,
        "status": "running",
    }
    return canonical_bytes(value) + b"\n"

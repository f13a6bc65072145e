"""``factory smoke``: the coordination tracer (SPEC B-6)."""

from __future__ import annotations

import argparse
from typing import Any

from factory.cli.framework import emit_stdout, say
from factory.errors import UsageError

BAD_SMOKE_DIAGNOSTICS = UsageError.define(
    "bad-smoke-diagnostics", "unset FACTORY_SMOKE_TRANSPORT and FACTORY_SMOKE_BACKEND"
)

HELP = """\
Run the coordination tracer: claim a new --data-dir, spawn `factory bus serve` on it, drive
three actors (coordinator, builder, reviewer) through the six verbs over a real MCP client
session, then verify the event log with evidence claimed.

Writes a factory.smoke-report/1 to --out and prints exactly the same bytes. No code is
executed: the artifact is only hashed. Refused with exit 2, touching nothing: an existing
--out, an --out inside --data-dir, a missing or non-regular --artifact, an existing
--data-dir, a missing folder for --data-dir or --out, an argument that is not UTF-8.
Exit 4 when the evidence gate fails or the log is corrupt.

Diagnostics for benchmarks: FACTORY_SMOKE_TRANSPORT=prespawned|sdk-stdio (how the server
is spawned and wired to the SDK ClientSession) and FACTORY_SMOKE_BACKEND=asyncio|trio.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("smoke", help="coordination tracer over the MCP bus", description=HELP)
    p.add_argument("--data-dir", required=True, help="new folder to claim for the bus log")
    p.add_argument("--artifact", required=True, help="regular file to hash and hand around")
    p.add_argument("--out", required=True, help="report path (must not exist)")
    p.add_argument(
        "--task", default=None, help='task text (default "Review the supplied artifact")'
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from factory.bus.sdk import collector_paused

    # A short run that is mostly imports (pydantic, the SDK's client side): no cycle
    # collections until it is done (issue 25; the bus server pauses its own start-up too).
    with collector_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from factory.bus.smoke import DEFAULT_TASK, SmokeRequest, run_smoke
    from factory.bus.spawn import BACKENDS, TRANSPORTS

    transport = os.environ.get("FACTORY_SMOKE_TRANSPORT") or "prespawned"
    backend = os.environ.get("FACTORY_SMOKE_BACKEND") or "asyncio"
    if transport not in TRANSPORTS or backend not in BACKENDS:
        raise BAD_SMOKE_DIAGNOSTICS(
            f"FACTORY_SMOKE_TRANSPORT is not one of {', '.join(TRANSPORTS)} or "
            f"FACTORY_SMOKE_BACKEND not one of {', '.join(BACKENDS)}"
        )
    req = SmokeRequest(
        data_dir=Path(args.data_dir),
        artifact=Path(args.artifact),
        out=Path(args.out),
        task=DEFAULT_TASK if args.task is None else args.task,
    )
    code, data = run_smoke(req, transport=transport, backend=backend)
    emit_stdout(data)
    if code != 0:
        import json

        error = json.loads(data).get("error") or {}
        code_name, message = error.get("code", "failed"), error.get("message", "")
        say(f"factory: {code_name}: {message} (report: {req.out})")
    return code

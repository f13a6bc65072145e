"""``factory receipt verify R`` and ``factory receipt show R`` (SPEC A-8).

``verify`` re-hashes every evidence file, checks the revision and the exact canonical
bytes, and — when the worktree still exists — re-derives the candidate identity and says
whether it still matches. It prints one JSON object on stdout; exit 0 when everything
holds, 4 on any integrity failure, 2 when the receipt path does not exist.

``show`` renders a receipt for an operator (``factory.agent.receipt_show.render``).
"""

from __future__ import annotations

import argparse
import json
from importlib import import_module
from pathlib import Path
from typing import Any

from factory.cli.framework import emit_stdout, say
from factory.errors import UsageError

NOT_AVAILABLE = UsageError.define("not-available", "reinstall factory with ./scripts/setup")

VERIFY_HELP = """\
Re-check an agent receipt without trusting it: its revision and canonical bytes, every
evidence file's size and SHA-256, and (if the worktree still exists) whether the candidate
it judged still matches the worktree. Prints JSON; exit 0 ok, 4 integrity failure.
"""

SHOW_HELP = "Render an agent receipt for a person (outcome, phases, candidate, evidence)."


def register(sub: Any) -> None:
    p = sub.add_parser("receipt", help="verify or show an agent receipt")
    rsub = p.add_subparsers(title="receipt commands", metavar="COMMAND", parser_class=type(p))
    v = rsub.add_parser("verify", help="re-check a receipt", description=VERIFY_HELP)
    v.add_argument("receipt", metavar="R", help="receipt path")
    v.set_defaults(handler=run_verify)
    s = rsub.add_parser("show", help="render a receipt", description=SHOW_HELP)
    s.add_argument("receipt", metavar="R", help="receipt path")
    s.set_defaults(handler=run_show)


def run_verify(args: argparse.Namespace) -> int:
    from factory.agent.verify import verify
    from factory.errors import ExitCode

    report = verify(Path(args.receipt))
    emit_stdout((json.dumps(report, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    if report["route"] == "rehearsal":
        say(
            "factory: REHEARSAL receipt: a scripted loopback model ran, not a real one; it "
            "proves the control path, nothing about model judgement"
        )
    if report["ok"]:
        return int(ExitCode.OK)
    from factory.display import inert  # a forged receipt's role names are its own

    say(inert(f"factory: receipt-not-verified: {'; '.join(failed_checks(report))}"))
    return int(ExitCode.FAILURE)


def failed_checks(report: dict[str, Any]) -> list[str]:
    """Which checks of a ``factory.receipt-verification/1`` report failed, one short phrase
    each (observed: exit 4 with nothing on stderr left a user to read the JSON)."""
    failed: list[str] = []
    if not report["revision"]["ok"]:
        failed.append("revision does not match the body")
    if not report["canonical_bytes"]:
        failed.append("bytes are not the canonical form")
    if not report["terminal"]:
        failed.append("the run never finished (status running)")
    failed.extend(f"inconsistent: {p}" for p in report["consistency_problems"])
    failed.extend(
        f"evidence {e['role']}: {e['problem']}" for e in report["evidence"] if not e["ok"]
    )
    if report["candidate"].get("still_matches") is False:
        failed.append("the worktree no longer holds the judged candidate")
    return failed or ["see the JSON on stdout"]


def run_show(args: argparse.Namespace) -> int:
    from factory.agent.verify import load_receipt

    try:
        show = import_module("factory.agent.receipt_show")
    except ModuleNotFoundError as exc:
        raise NOT_AVAILABLE(
            "'factory receipt show' is not available in this build of factory"
        ) from exc
    from rich.console import Console

    _, data = load_receipt(Path(args.receipt))
    show.render(json.loads(data), Console(soft_wrap=False))
    return 0

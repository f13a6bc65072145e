"""``factory receipt verify R`` and ``factory receipt show R`` (SPEC A-8).

``verify`` re-hashes every evidence file, checks the revision and the exact canonical
bytes, and — when the worktree still exists — re-derives the candidate identity and says
whether it still matches. It prints one JSON object on stdout; exit 0 when everything
holds, 4 on any integrity failure, 2 when the receipt path does not exist.

``show`` verifies, then renders the receipt for an operator (terminal, and with ``--html`` a
self-contained page): :mod:`factory.agent.receipt_show`, :mod:`factory.agent.receipt_html`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.cli.framework import emit_stdout, say
from factory.documents.emit import json_line
from factory.errors import IntegrityFailure, Refused

if TYPE_CHECKING:
    from factory.agent.receipt_apply import ReceiptApplication

HTML_FOLDER_MISSING = Refused.define("html-folder-missing", "create the folder of --html first")
RECEIPT_VERIFICATION_FAILED = IntegrityFailure.define(
    "receipt-verification-failed",
    "keep the receipt and its evidence as they are; the JSON on stdout names every check",
)

VERIFY_HELP = """\
Re-check an agent receipt without trusting it: its revision and canonical bytes, every
evidence file's size and SHA-256, and (if the worktree still exists) whether the candidate
it judged still matches the worktree. Prints JSON; exit 0 ok, 4 integrity failure.
"""

SHOW_HELP = """\
Verify an agent receipt, then render it for a person: the verification result first, the
outcome and route (a rehearsal says so), the phases, what the reviewers said (model
output, labelled so), the candidates' changed files, the evidence and the residuals.
Exit 0 when the receipt verifies; 4 when it does not — a red banner then names the failed
checks first and last, and nothing in between is shown as trustworthy.
"""


APPLY_HELP = """\
Take the change an approved run made into a checkout (default: the current folder).
R is verified first (revision, bytes, every evidence file; an unverified or unapproved
receipt is refused). The target must be clean and its HEAD tree must be the receipt's
base tree (with --3way the change is merged onto your HEAD instead, and the result says
it is no longer the judged tree). The bound patch is applied with git in a private index
(no repository program runs) and must produce exactly the candidate tree; only then is
it staged in the target, or committed with --commit (author: you; the message names the
receipt's revision). --branch NAME first moves the checkout to a new branch NAME at its
HEAD. Nothing is pushed. A rehearsal receipt's change may be applied; the result says so.
stdout: a factory.receipt-application/1 JSON object. Exit 0 applied, 2 refused (target
untouched), 4 the receipt is not one, or staging failed.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("receipt", help="verify or show an agent receipt")
    rsub = p.add_subparsers(title="receipt commands", metavar="COMMAND", parser_class=type(p))
    v = rsub.add_parser("verify", help="re-check a receipt", description=VERIFY_HELP)
    v.add_argument("receipt", metavar="R", help="receipt path")
    v.set_defaults(handler=run_verify)
    s = rsub.add_parser("show", help="render a receipt", description=SHOW_HELP)
    s.add_argument("receipt", metavar="R", help="receipt path")
    s.add_argument("--diff", action="store_true", help="also show each candidate's bound patch")
    s.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write one self-contained HTML page (must not exist)",
    )
    s.set_defaults(handler=run_show)
    a = rsub.add_parser(
        "apply", help="take an approved change into a checkout", description=APPLY_HELP
    )
    a.add_argument("receipt", metavar="R", help="receipt path")
    a.add_argument("--to", metavar="DIR", default=".", help="the checkout (default: here)")
    a.add_argument("--commit", action="store_true", help="commit it (default: leave it staged)")
    a.add_argument("--branch", metavar="NAME", help="first move the checkout to new branch NAME")
    a.add_argument(
        "--3way",
        dest="three_way",
        action="store_true",
        help="merge onto a HEAD other than the receipt's base (then not the judged tree)",
    )
    a.set_defaults(handler=run_apply)


def run_verify(args: argparse.Namespace) -> int:
    from factory.agent.verify import failed_checks, verify
    from factory.errors import ExitCode

    report = verify(Path(args.receipt))
    value = report.to_json_value()
    emit_stdout(json_line(value, sort_keys=True))
    if report.route == "rehearsal":
        say(
            "factory: REHEARSAL receipt: a scripted loopback model ran, not a real one; it "
            "proves the control path, nothing about model judgement"
        )
    if report.ok:
        return int(ExitCode.OK)

    say(RECEIPT_VERIFICATION_FAILED("; ".join(failed_checks(report))).shown())
    return int(ExitCode.FAILURE)


def run_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from factory.agent.receipt_show import render_verified
    from factory.agent.verify import load_receipt, verify
    from factory.cli.framework import GuardedStdout
    from factory.display import inert
    from factory.errors import ExitCode

    path = Path(args.receipt)
    html = Path(args.html) if args.html is not None else None
    receipt, _ = load_receipt(path)  # a missing or invalid receipt is refused first
    if html is not None:
        reserve_html(html)
    report = verify(path)  # verify first: the view says what held before what is claimed
    out = GuardedStdout()  # a full device: the page is still written, then exit 4
    console = Console(soft_wrap=False, file=out)  # type: ignore[arg-type]
    value = report.to_json_value()
    facts = render_verified(receipt, value, console, receipt_path=path, diff=args.diff)
    if html is not None:
        from factory import fsio
        from factory.agent.receipt_html import render_html

        fsio.atomic_replace(html, render_html(facts, path).encode("utf-8"), mode=0o644)
        say(inert(f"factory: HTML receipt written to {html}"))
    out.check(kept_in=None if html is None else str(html))
    if facts.verified:
        return int(ExitCode.OK)
    say(RECEIPT_VERIFICATION_FAILED("; ".join(facts.failed)).shown())
    return int(ExitCode.FAILURE)


HTML_PLACEHOLDER = b"<!DOCTYPE html><title>factory receipt</title><p>being written...</p>\n"


def reserve_html(out: Path) -> None:
    """Claim ``--html OUT`` before anything else (it must not exist; exit 2 otherwise)."""
    from factory import fsio

    try:
        fsio.reserve(out, HTML_PLACEHOLDER, mode=0o644)
    except FileNotFoundError:
        raise HTML_FOLDER_MISSING(f"the folder of {out} does not exist") from None
    except IsADirectoryError:
        raise fsio.OUTPUT_EXISTS(f"{out} is a folder") from None


def run_apply(args: argparse.Namespace) -> int:
    import os

    from factory.agent.receipt_apply import ApplyRequest, apply_receipt
    from factory.cli.framework import refuse_non_utf8
    from factory.display import inert

    refuse_non_utf8(args, {"receipt": "R", "to": "--to", "branch": "--branch"})
    request = ApplyRequest(
        receipt=Path(args.receipt),
        to=Path(args.to),
        commit=args.commit,
        branch=args.branch,
        three_way=args.three_way,
    )
    done = apply_receipt(request, os.environ)
    emit_stdout(done.canonical() + b"\n")
    for line in applied_lines(done):
        say(inert(line))
    return 0


def applied_lines(done: ReceiptApplication) -> list[str]:
    """What a person reads on stderr after ``receipt apply`` (the JSON is on stdout)."""
    lines = []
    if done.rehearsal:
        lines.append(f"factory: {done.note}")  # the note names the REHEARSAL once
    if done.judged_tree:
        what = "the judged tree, byte for byte"
    else:
        what = "merged onto your HEAD (--3way): NOT the judged tree; review it before use"
    if done.result == "committed":
        lines.append(f"factory: applied and committed as {(done.commit or '')[:12]}: {what}")
    else:
        lines.append(
            f"factory: applied and staged: {what}; review it (git diff --cached), then commit"
        )
    lines.append("factory: nothing was pushed")
    return lines

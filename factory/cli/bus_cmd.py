"""``factory bus serve|verify``: the bus over MCP stdio, and its verifier (B-2, B-5)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from factory.cli.framework import StrictParser, emit_stdout, say
from factory.errors import Refused

NO_EVENT_LOG = Refused.define("no-event-log", "pass the --data-dir that a bus or smoke run used")

HELP = """\
The coordination bus: a durable, append-only event log (DATA_DIR/events.jsonl) behind six
verbs (register, send, inbox, ack, handoff, heartbeat).

  serve   serve the six verbs as MCP tools over stdio (for Claude Code, Codex, any MCP
          client); DATA_DIR is created if missing; a corrupt log is refused (exit 4)
  verify  print the log's fixed point and every check's result as JSON; exit 0 when every
          gating check passed, 4 otherwise; read-only
  register|send|inbox|ack|handoff|heartbeat
          one verb through the same core as the MCP tools; prints the result as JSON;
          a verb the bus refuses is recorded (command.rejected) and exits 3
          (a text that starts with '-' is passed as --text=-...)
"""

# verb -> (flag, argument key, kind) where kind is "str", "int", "flag" or "list".
VERB_FLAGS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "register": (
        ("--name", "name", "str"),
        ("--kind", "kind", "str"),
        ("--capability", "capabilities", "list"),
    ),
    "send": (
        ("--from", "from", "str"),
        ("--to", "to", "str"),
        ("--text", "text", "str"),
        ("--kind", "kind", "str"),
        ("--correlation-id", "correlationId", "str"),
        ("--reply-to", "replyTo", "str"),
        ("--expects-reply", "expectsReply", "flag"),
        ("--request-authority", "requestedAuthority", "list"),
    ),
    "inbox": (("--actor", "actor", "str"), ("--limit", "limit", "int")),
    "ack": (
        ("--actor", "actor", "str"),
        ("--message-id", "messageId", "str"),
        ("--note", "note", "str"),
    ),
    "handoff": (
        ("--from", "from", "str"),
        ("--to", "to", "str"),
        ("--summary", "summary", "str"),
        ("--correlation-id", "correlationId", "str"),
        ("--reply-to", "replyTo", "str"),
    ),
    "heartbeat": (("--actor", "actor", "str"), ("--status", "status", "str")),
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bus", help="coordination bus: serve over MCP, verify, the six verbs", description=HELP
    )
    verbs = p.add_subparsers(title="bus commands", metavar="COMMAND", parser_class=StrictParser)
    serve = verbs.add_parser(
        "serve",
        help="serve the bus over MCP stdio",
        description="Serve the six verbs as MCP tools over stdio (for Claude Code, Codex, any "
        "MCP client).\nDATA_DIR is created if missing; a corrupt log is refused (exit 4).",
    )
    serve.add_argument("--data-dir", required=True, help="folder holding events.jsonl")
    serve.set_defaults(handler=run_serve)
    verify = verbs.add_parser(
        "verify",
        help="verify an event log (read-only)",
        description="Print the log's fixed point and every check's result as JSON (read-only).\n"
        "Exit 0 when every gating check passed, 4 otherwise.",
    )
    verify.add_argument("--data-dir", required=True, help="folder holding events.jsonl")
    verify.add_argument(
        "--as-evidence",
        action="store_true",
        help="claim the log as evidence: the five richness checks gate too",
    )
    verify.set_defaults(handler=run_verify)
    for verb, flags in VERB_FLAGS.items():
        vp = verbs.add_parser(
            verb,
            help=f"the {verb} verb on a data dir (JSON result)",
            description=f"The {verb} verb through the same core as the MCP tools; prints the "
            "result as JSON.\nA verb the bus refuses (a missing or invalid argument included) is\n"
            "recorded as command.rejected and exits 3.",
        )
        vp.add_argument("--data-dir", required=True, help="folder holding events.jsonl")
        for flag, key, kind in flags:
            dest = "arg_" + key
            # Shown as the MCP argument name (`--correlation-id correlationId`), not the dest.
            if kind == "flag":
                vp.add_argument(flag, dest=dest, action="store_true", help=f"sets {key}")
            elif kind == "list":
                vp.add_argument(
                    flag,
                    dest=dest,
                    action="append",
                    default=None,
                    metavar=key,
                    help=f"one item of {key} (repeat the flag for more)",
                )
            else:
                vp.add_argument(
                    flag,
                    dest=dest,
                    type=int if kind == "int" else str,
                    default=None,
                    metavar=key,
                )
        vp.set_defaults(handler=run_verb, verb=verb)


def run_serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    from factory.bus.server import serve

    if sys.stdin is not None and sys.stdin.isatty():
        # Typed at a terminal it would look hung: MCP clients pipe stdin, people do not.
        say(
            "factory bus serve: waiting for an MCP client on stdin (JSON-RPC lines); "
            "this is for Claude Code, Codex or another MCP client to spawn. Ctrl-D stops it."
        )
    serve(Path(args.data_dir))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from factory.bus.log import LOG_NAME
    from factory.bus.verify import verify
    from factory.errors import ExitCode

    data_dir = Path(args.data_dir)
    if not os.path.lexists(data_dir / LOG_NAME):  # anything else there is refused by verify
        raise NO_EVENT_LOG(f"no event log at {data_dir / LOG_NAME}")
    report = verify(data_dir, as_evidence=args.as_evidence)
    emit_stdout((json.dumps(report, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    if report["ok"]:
        return int(ExitCode.OK)
    failed = [c["id"] for c in report["checks"] if c["gates"] and not c["ok"]]
    say(f"factory: verification-failed: gating checks failed: {', '.join(failed)}")
    return int(ExitCode.FAILURE)


def run_verb(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from factory.bus.server import handle_call, open_data_dir
    from factory.errors import ExitCode

    arguments: dict[str, Any] = {}
    for _flag, key, kind in VERB_FLAGS[args.verb]:
        value = getattr(args, "arg_" + key)
        if value is not None and not (kind == "flag" and value is False):
            arguments[key] = value
    log = open_data_dir(Path(args.data_dir))
    is_error, payload = handle_call(log, args.verb, arguments, raise_failures=True)
    if is_error:
        say(f"factory: {payload['error']}: {payload['message']} (recorded as command.rejected)")
        fields = payload.get("fields")
        if isinstance(fields, list) and fields:
            # "see fields" names MCP argument keys: a shell user needs the flags.
            flag_of = {key: flag for flag, key, _kind in VERB_FLAGS[args.verb]}
            say("factory: fields: " + ", ".join(flag_of.get(str(f), str(f)) for f in fields))
        return int(ExitCode.REJECTED)
    emit_stdout((json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    return int(ExitCode.OK)

"""``factory bus serve|verify``: the bus over MCP stdio, and its verifier (B-2, B-5)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from factory.cli.digest_cmd import EMPTY_PATH
from factory.cli.framework import StrictParser, emit_stdout, say
from factory.documents.emit import json_line
from factory.errors import Failure, Refused, UsageError

BUS_VERIFICATION_FAILED = Failure.define(
    "bus-verification-failed",
    "keep the log as evidence; 'factory bus verify --json' names every check",
)
NO_EVENT_LOG = Refused.define("no-event-log", "pass the --data-dir that a bus or smoke run used")
STDIO_CLOSED = UsageError.define(
    "stdio-closed", "bus serve speaks MCP on stdin and stdout: start it with both open"
)


def data_dir_of(args: argparse.Namespace) -> Path:
    """``--data-dir`` as a path; an empty one is refused (it would mean the current folder)."""
    if not args.data_dir:
        raise EMPTY_PATH("--data-dir is empty")
    return Path(args.data_dir)


ENTRY_NEEDS_CLAUDE = UsageError.define(
    "entry-needs-claude", "drop --entry, or use it with --client claude"
)

HELP = """\
The coordination bus: a durable, append-only event log (DATA_DIR/events.jsonl) behind six
verbs (register, send, inbox, ack, handoff, heartbeat).

  serve   serve the six verbs as MCP tools over stdio (for Claude Code, Codex, any MCP
          client); DATA_DIR is created if missing; a corrupt log is refused (exit 4)
  mcp-config
          print a ready configuration that makes Claude Code or Codex start the bus, with
          the factory executable and DATA_DIR as absolute paths; --install puts it into
          the client's own configuration file (idempotent)
  verify  print the log's fixed point and every check's result as JSON; exit 0 when every
          gating check passed, 4 otherwise; read-only
  register|send|inbox|ack|handoff|heartbeat
          one verb through the same core as the MCP tools; prints the result as JSON;
          a verb the bus refuses is recorded (command.rejected) and exits 3
          (a text that starts with '-' is passed as --text=-...)
"""

MCP_CONFIG_HELP = """\
Print a configuration that makes an MCP client start this bus: the factory executable and
the data dir as absolute paths (a relative --data-dir in a client's configuration resolves
against wherever that client was started, so sessions in different folders would silently
get separate buses). Printed on stdout only; nothing is created.

With --install, put the server into the client's own file instead, for every session of
this user: Codex's $CODEX_HOME/config.toml (default ~/.codex/config.toml) or Claude Code's
~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json when set). Safe to run again: the same
flags change nothing; other servers, comments and formatting are kept; a file that does
not parse is refused (exit 2) and left untouched. One line on stderr says what changed.

  Claude Code:  factory bus mcp-config --data-dir D > .mcp.json
                claude --mcp-config .mcp.json ...        (or, once for the user:)
                factory bus mcp-config --data-dir D --install
  Codex:        factory bus mcp-config --data-dir D --client codex --install
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

# (verb, argument key) -> the MCP input schema's description of that argument (kept equal
# by tests/bus/test_cli_help.py; written out so --help does not import the models).
FLAG_HELP: dict[tuple[str, str], str] = {
    ("register", "name"): "a name of your choosing (letters, digits, '.', '_', '-'; up to 64)",
    ("register", "kind"): "actor kind, e.g. coordinator, worker, reviewer",
    ("register", "capabilities"): "what the actor can do (up to 16 words)",
    ("send", "from"): "your actor ref (act-NNNN)",
    ("send", "to"): "the recipient's actor ref (act-NNNN)",
    ("send", "text"): "the message; recorded as untrusted data",
    ("send", "kind"): "message kind, e.g. note, request, result",
    ("send", "correlationId"): "continue this thread (cor-NNNN)",
    ("send", "replyTo"): "where replies should go (act-NNNN)",
    ("send", "expectsReply"): "the sender asks for a reply",
    (
        "send",
        "requestedAuthority",
    ): "authorities to grant: only read, observe, suggest, draft, report can be; "
    "any other is recorded as denied",
    ("inbox", "actor"): "whose inbox (act-NNNN)",
    ("inbox", "limit"): "at most this many (1-500)",
    ("ack", "actor"): "the recipient acknowledging (act-NNNN)",
    ("ack", "messageId"): "the message (msg-NNNN)",
    ("ack", "note"): "a short note (up to 1024 characters)",
    ("handoff", "from"): "your actor ref (act-NNNN)",
    ("handoff", "to"): "who takes the work over (act-NNNN)",
    ("handoff", "summary"): "what is handed over; recorded as untrusted data",
    ("handoff", "correlationId"): "the thread handed over (cor-NNNN)",
    ("handoff", "replyTo"): "where replies should go (act-NNNN)",
    ("heartbeat", "actor"): "your actor ref (act-NNNN)",
    ("heartbeat", "status"): "a short status (up to 1024 characters)",
}


# verb -> its required argument keys (the input schemas' "required"; same test).
REQUIRED: dict[str, tuple[str, ...]] = {
    "register": ("name", "kind"),
    "send": ("from", "to", "text"),
    "inbox": ("actor",),
    "ack": ("actor", "messageId"),
    "handoff": ("from", "to", "summary"),
    "heartbeat": ("actor",),
}


def _help(verb: str, key: str, required: bool) -> str:
    return FLAG_HELP[(verb, key)] + ("; required" if required else "")


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
    config = verbs.add_parser(
        "mcp-config",
        help="print an MCP client configuration for the bus (absolute paths)",
        description=MCP_CONFIG_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    config.add_argument(
        "--data-dir",
        required=True,
        help="the bus's folder; written as an absolute path, so every session shares one bus",
    )
    config.add_argument(
        "--client",
        choices=("claude", "codex"),
        default="claude",
        help="claude: JSON for .mcp.json or --mcp-config (default); codex: the TOML table "
        "for ~/.codex/config.toml",
    )
    shape = config.add_mutually_exclusive_group()
    shape.add_argument(
        "--entry",
        action="store_true",
        help="claude only: print just the server object, for 'claude mcp add-json factory'",
    )
    shape.add_argument(
        "--install",
        action="store_true",
        help="edit the client's configuration file instead of printing (idempotent)",
    )
    config.set_defaults(handler=run_mcp_config)
    verify = verbs.add_parser(
        "verify",
        help="verify an event log (read-only)",
        description="At a terminal, what the sessions did (actors, messages and threads,\n"
        "acknowledgements, handoffs, refused commands) and the verdict; with --json, or\n"
        "when stdout is not a terminal, the log's fixed point and every check's result as\n"
        "JSON (factory.bus-verification/1). Read-only. Exit 0 when every gating check\n"
        "passed, 4 otherwise. The five richness checks gate only with --as-evidence.",
    )
    verify.add_argument("--json", action="store_true", help="the JSON report, also at a terminal")
    verify.add_argument("--data-dir", required=True, help="folder holding events.jsonl")
    verify.add_argument(
        "--as-evidence",
        action="store_true",
        help="claim the log as evidence: the five richness checks gate too",
    )
    verify.set_defaults(handler=run_verify, read_only=True)  # no crash log in the data dir
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
            text = _help(verb, key, key in REQUIRED.get(verb, ()))
            if kind == "flag":
                vp.add_argument(flag, dest=dest, action="store_true", help=text)
            elif kind == "list":
                vp.add_argument(
                    flag,
                    dest=dest,
                    action="append",
                    default=None,
                    metavar=key,
                    help=f"{text} (one item; repeat the flag for more)",
                )
            else:
                vp.add_argument(
                    flag,
                    dest=dest,
                    type=int if kind == "int" else str,
                    default=None,
                    metavar=key,
                    help=text,
                )
        vp.set_defaults(handler=run_verb, verb=verb)


def run_serve(args: argparse.Namespace) -> int:
    from factory.bus.sdk import collector_paused

    with collector_paused():  # the start-up's imports (issue 25); serve() pauses it again
        from factory.bus.server import serve
    from factory.errors import ExitCode

    _require_stdio()
    data_dir = data_dir_of(args)
    # Decided now: once serving, fd 0 is the screening pipe (factory.bus.wire), not the tty.
    at_terminal = sys.stdin is not None and sys.stdin.isatty()

    def ready() -> None:
        if at_terminal:
            # Typed at a terminal it would look hung: MCP clients pipe stdin, people do not.
            say(
                "factory bus serve: waiting for an MCP client on stdin (JSON-RPC lines); "
                "this is for Claude Code, Codex or another MCP client to spawn (see 'factory "
                "bus mcp-config'). Ctrl-C or Ctrl-D stops it."
            )

    if serve(data_dir, on_ready=ready):
        say("factory bus serve: stopped (Ctrl-C); nothing was written to the log for it")
        return int(ExitCode.INTERRUPTED)
    return 0


def run_mcp_config(args: argparse.Namespace) -> int:
    from factory.bus.mcp_config import render

    if args.entry and args.client != "claude":
        raise ENTRY_NEEDS_CLAUDE("--entry prints Claude Code's server object only")
    if args.install:
        from factory.bus.mcp_install import install

        say("factory bus mcp-config: " + install(args.client, data_dir_of(args), os.environ))
        return 0
    emit_stdout(render(args.client, data_dir_of(args), entry=args.entry).encode("utf-8"))
    return 0


def _require_stdio() -> None:
    """Refuse to serve without stdin and stdout (exit 2, before anything is opened: a file
    opened next would otherwise take the free descriptor and be read as the client)."""
    for fd, stream, name in ((0, sys.stdin, "stdin"), (1, sys.stdout, "stdout")):
        try:
            os.fstat(fd)
        except OSError:
            stream = None
        if stream is None:
            raise STDIO_CLOSED(f"bus serve was started with {name} closed")


def run_verify(args: argparse.Namespace) -> int:

    from factory.bus.log import LOG_NAME
    from factory.bus.verify import verify
    from factory.errors import ExitCode

    data_dir = data_dir_of(args)
    if not os.path.lexists(data_dir / LOG_NAME):  # anything else there is refused by verify
        raise NO_EVENT_LOG(f"no event log at {data_dir / LOG_NAME}")
    report = verify(data_dir, as_evidence=args.as_evidence)
    if args.json or sys.stdout is None or not sys.stdout.isatty():
        emit_stdout(json_line(report.to_json_value(), indent=2))
    else:
        from factory.bus.summary import activity, render

        text = "\n".join(render(data_dir, report, activity(data_dir))) + "\n"
        emit_stdout(text.encode("utf-8"))
    if report.ok:
        return int(ExitCode.OK)
    failed = ", ".join(report.failed_gates())
    say(BUS_VERIFICATION_FAILED(f"gating checks failed: {failed}").diagnostics())
    return int(ExitCode.FAILURE)


def run_verb(args: argparse.Namespace) -> int:

    from factory.bus.log import LOG_NAME
    from factory.bus.server import handle_call, open_data_dir
    from factory.errors import ExitCode

    arguments: dict[str, Any] = {}
    for _flag, key, kind in VERB_FLAGS[args.verb]:
        value = getattr(args, "arg_" + key)
        if value is not None and not (kind == "flag" and value is False):
            arguments[key] = value
    data_dir = data_dir_of(args)
    log = open_data_dir(data_dir)
    is_error, payload = handle_call(log, args.verb, arguments, raise_failures=True)
    if is_error:
        say(f"factory: {payload['error']}: {payload['message']} (recorded as command.rejected)")
        fields = payload.get("fields")
        if isinstance(fields, list) and fields:
            # "see fields" names MCP argument keys: a shell user needs the flags.
            flag_of = {key: flag for flag, key, _kind in VERB_FLAGS[args.verb]}
            say("factory: fields: " + ", ".join(flag_of.get(str(f), str(f)) for f in fields))
        return int(ExitCode.REJECTED)
    out = json_line(payload, sort_keys=True)
    emit_stdout(out, kept_in=f"the event log {data_dir / LOG_NAME}")
    return int(ExitCode.OK)

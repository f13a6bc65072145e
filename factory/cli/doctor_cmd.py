"""``factory doctor``: what provider CLIs are installed and usable here (issue 4).

stdout: the ``factory.doctor/1`` JSON report (canonical bytes, one line). stderr: the same
as a readable table. Exit 0 whenever the report was produced; readiness is in
``routes.rehearsal`` / ``routes.subscription``.
"""

from __future__ import annotations

import argparse
from typing import Any

HELP = "show the provider CLIs found, their versions, logins and Codex's sandbox"


EPILOG = """\
stdout: one JSON line, schema factory.doctor/1:
  {"schema", "routes": {"rehearsal", "subscription"},
   "profiles": {"claude"|"codex": {"binary": {"path", "found", "via", "unwrapped"}|null,
     "version", "pinned", "matches_pin", "roles", "login": {"present", "method",
     "detail"}|null, "ignored_env", "problems", "sandbox" (codex only)}}}
stderr: the same as a table. Exit 0 whenever the report was made; readiness is in
"routes". "ignored_env" names caller variables (keys, config homes, endpoints, proxies)
that are set but never passed to the CLIs (SPEC P-3)."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help=HELP,
        description=HELP + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=_handle)


def _yes(value: object) -> str:
    return {True: "yes", False: "NO", None: "-"}.get(value, str(value))  # type: ignore[call-overload, no-any-return]


def _cells(name: str, entry: dict[str, Any]) -> list[str]:
    binary = entry["binary"]
    login = entry["login"]
    sandbox = entry.get("sandbox")
    return [
        ", ".join(entry["roles"]),
        binary["path"] if binary else "not found",
        (binary["via"] + (f", unwrapped {binary['unwrapped']}" if binary["unwrapped"] else ""))
        if binary
        else "-",
        entry["version"] or "-",
        f"{entry['pinned'] or '-'} (matches: {_yes(entry['matches_pin'])})",
        (_yes(login["present"]) + (f" ({login['method']})" if login["method"] else ""))
        if login
        else "-",
        f"{_yes(sandbox['read_only_works'])}: {sandbox['detail']}"
        if sandbox
        else ("n/a" if name == "claude" else "-"),
        ", ".join(entry["ignored_env"]) or "-",
    ]


def _render(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    names = list(report["profiles"])
    table = Table(title="factory doctor", show_lines=True)
    table.add_column("check", no_wrap=True)
    for name in names:
        table.add_column(name, overflow="fold")
    columns = [_cells(name, report["profiles"][name]) for name in names]
    labels = (
        "roles",
        "binary",
        "found via",
        "version",
        "pinned",
        "login",
        "read-only sandbox",
        "ignored env",
    )
    for i, label in enumerate(labels):
        table.add_row(label, *(col[i] for col in columns))
    console = Console(stderr=True)
    console.print(table)
    routes = report["routes"]
    console.print(
        f"rehearsal route ready: {_yes(routes['rehearsal'])}; "
        f"subscription route ready: {_yes(routes['subscription'])}",
        highlight=False,
    )
    for name in names:
        for problem in report["profiles"][name]["problems"]:
            console.print(f"{name}: {problem}", markup=False, highlight=False)


def _handle(args: argparse.Namespace) -> int:
    import trio

    from factory.cli.framework import emit_stdout
    from providers.doctor import diagnose

    report = trio.run(diagnose)
    _render(report.to_json_value())
    emit_stdout(report.canonical() + b"\n")
    return 0

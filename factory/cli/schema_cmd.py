"""``factory schema [NAME]``: the JSON Schema of a published document (issue 9 §6).

With NAME (a short name or a schema id) stdout carries the shipped schema file's bytes
exactly; without it, the list of names. An unknown NAME is a usage error (exit 2) that
lists the names. See :mod:`factory.documents.registry` for how the files are made and kept in
sync with the models.
"""

from __future__ import annotations

import argparse
from typing import Any

from factory.cli.framework import emit_stdout
from factory.documents.registry import REGISTRY, find, shipped
from factory.errors import UsageError

UNKNOWN_SCHEMA = UsageError.define(
    "unknown-schema", "run factory schema without a name to list the published documents"
)

HELP = "print the JSON Schema of a published document (receipt, reports, verifications)"


def _listing() -> str:
    width = max(len(doc.name) for doc in REGISTRY)
    return "".join(f"  {doc.name:<{width}}  {doc.schema_id}: {doc.summary}\n" for doc in REGISTRY)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help=HELP,
        description=(
            "Print the JSON Schema (draft 2020-12) of one of factory's published documents,\n"
            "generated from its model: what factory accepts when it reads the document back,\n"
            "so every document factory writes validates against it. Without NAME, list the\n"
            "names. Exit 0; 2 for an unknown NAME."
        ),
        epilog="published documents (NAME or schema id):\n" + _listing(),
    )
    name = p.add_argument("name", nargs="?", metavar="NAME", help="short name or schema id")
    name.completer = _names  # argcomplete offers the names, not files
    p.set_defaults(handler=_handle)


def _names(**_: object) -> list[str]:
    return [doc.name for doc in REGISTRY]


def _handle(args: argparse.Namespace) -> int:
    if args.name is None:
        emit_stdout(_listing().encode("utf-8"))
        return 0
    doc = find(args.name)
    if doc is None:
        import difflib

        near = difflib.get_close_matches(args.name, [d.name for d in REGISTRY], n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise UNKNOWN_SCHEMA(
            f"no published document is called {args.name!r} among the {len(REGISTRY)}{hint}"
        )
    emit_stdout(shipped(doc))
    return 0

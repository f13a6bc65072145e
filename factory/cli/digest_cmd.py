"""``factory digest``: the inventory digest of a tree (SPEC F-6)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from factory.cli.framework import emit_stdout
from factory.documents.emit import json_line
from factory.errors import UsageError

EMPTY_PATH = UsageError.define("empty-path", "name a path (an unset shell variable?)")

HELP = """\
Print the inventory-digest/1 fixed point of a tree (recipe ordinal-path-bytes-sha256/1).

Every regular file under --root is hashed; folders named .git or node_modules are skipped
at any depth. Symlinks, FIFOs, sockets, devices, names that are not UTF-8 or contain LF
are refused by name (exit 2), never skipped; so are unreadable entries and a --manifest
inside the root (judged by filesystem identity). Output lines: format=, root=, count=,
bytes=, [manifest=,] digest=ordinal-path-bytes-sha256/1 <hex>. --json also lists
"collisions": groups of paths equal under case folding or Unicode NFC (README.md beside
readme.md cannot be checked out on macOS or Windows); they never change the digest.

Files are hashed on every usable CPU (FACTORY_DIGEST_WORKERS=N overrides). Exit codes:
0 digested, 2 bad flags or refused (nothing written), 4 the manifest could not be written.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("digest", help="inventory digest of a tree", description=HELP)
    p.add_argument("--root", default=".", help="folder to measure (default: current folder)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument(
        "--manifest",
        help="also write the hashed document (+LF) to this new file (its folder must exist);"
        " refused inside --root",
    )
    p.add_argument(
        "--print-manifest", action="store_true", help="print the document before the summary"
    )
    p.set_defaults(handler=run, own_utf8_refusals=True)


def run(args: argparse.Namespace) -> int:
    from factory.inventory.service import digest_tree, printable

    for flag, value in (("--root", args.root), ("--manifest", args.manifest)):
        if value == "":
            # Path("") is ".": an unset shell variable would silently measure (or name)
            # the current folder.
            raise EMPTY_PATH(f"{flag} is empty")
    root = Path(args.root)
    manifest = Path(args.manifest) if args.manifest is not None else None
    shown_root = printable(root, "root")
    shown_manifest = printable(manifest, "manifest") if manifest is not None else None
    result = digest_tree(root, manifest=manifest)
    out = bytearray()
    if args.print_manifest:
        out += result.document + b"\n"
    if args.json:
        obj: dict[str, Any] = {
            "format": result.format,
            "recipe": result.recipe,
            "root": shown_root,
            "count": result.count,
            "bytes": result.total_bytes,
            "digest": result.digest,
            "collisions": [{"kind": g.kind, "paths": list(g.paths)} for g in result.collisions],
        }
        if manifest is not None:
            obj["manifest"] = shown_manifest
        out += json_line(obj)
    else:
        lines = [
            f"format={result.format}",
            f"root={shown_root}",
            f"count={result.count}",
            f"bytes={result.total_bytes}",
        ]
        if manifest is not None:
            lines.append(f"manifest={shown_manifest}")
        lines.append(f"digest={result.recipe} {result.digest}")
        out += ("\n".join(lines) + "\n").encode("utf-8")
    emit_stdout(bytes(out))
    return 0

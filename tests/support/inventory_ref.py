"""Trees for the inventory tests and an independent reference of the recipe (SPEC F-6).

``reference_document`` re-implements ``ordinal-path-bytes-sha256/1`` from its text, sharing
no code with :mod:`factory.inventory`: ``os.walk`` instead of ``scandir`` stacks, whole-file
reads instead of chunks, and UTF-16 code units computed by hand instead of a codec.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def utf16_units(text: str) -> list[int]:
    units: list[int] = []
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


def reference_document(root: Path) -> bytes:
    lines: list[tuple[list[int], str]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules")]
        for name in files:
            full = os.path.join(folder, name)
            with open(full, "rb") as fh:
                data = fh.read()
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            text = f"{rel}|{len(data)}|{hashlib.sha256(data).hexdigest()}"
            lines.append((utf16_units(rel), text))
    lines.sort(key=lambda pair: pair[0])
    return "\n".join(line for _, line in lines).encode("utf-8")


def reference_digest(root: Path) -> str:
    return hashlib.sha256(reference_document(root)).hexdigest()


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path

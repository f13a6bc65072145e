"""``file``: a file's SHA-256 and size, plus a value selected by JSON pointer.

Arguments: ``path`` (the file; symlinks and non-regular files are refused), ``pointer``
(optional RFC 6901 pointer into the file parsed as strict JSON), ``max_bytes`` (default
16 MiB). The observation is ``{sha256, bytes, value}``; when the pointer selects nothing,
``value`` is left out, so a binding that selects ``/value`` observes an absence (the whole
file was read and parsed, so the observation is complete).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factory.agent.evidence import read_nofollow
from factory.documents.canonical import sha256_hex
from factory.documents.reading import JsonRefused, read_json
from factory.gate.acquire_args import select
from factory.gate.providers import Observed, operational

DEFAULT_MAX = 16 << 20


async def acquire(args: Mapping[str, Any]) -> Observed:
    path = Path(args["path"])
    limit = int(args.get("max_bytes", DEFAULT_MAX))
    try:
        data = read_nofollow(path, limit=limit)
    except FileNotFoundError:
        return operational("provider-unavailable", "the file does not exist")
    except OSError:
        return operational("provider-refused", "not a readable regular file (symlinks refused)")
    if len(data) > limit:
        return operational("provider-output-limit", f"the file is larger than {limit} bytes")
    document: dict[str, Any] = {"sha256": sha256_hex(data), "bytes": len(data)}
    if "pointer" in args:
        try:
            parsed = read_json(data, limit=limit, decimals=True, lone_surrogates=True)
        except JsonRefused as exc:
            return operational("observation-unparsable", f"the file is not strict JSON: {exc}")
        found, value = select(parsed, str(args["pointer"]))
        if found:
            document["value"] = value
    return Observed(document, scope_kind="file", scope_value=document["sha256"])

"""Golden files: bytes a reviewed change may change only together with the file.

``assert_golden(path, data)`` compares ``data`` with the file; run the test with
``FACTORY_UPDATE_GOLDEN=1`` to write it instead, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path


def assert_golden(path: Path, data: bytes) -> None:
    """``data`` must equal the golden file ``path`` (written when updating)."""
    if os.environ.get("FACTORY_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert path.exists(), f"no golden file {path}; run with FACTORY_UPDATE_GOLDEN=1"
    assert data == path.read_bytes(), f"{path.name} changed"


def placeholders(data: bytes, **paths: Path | str) -> bytes:
    """``data`` with each path's text replaced by ``<name>`` (longest first), so bytes that
    name a temporary folder can be pinned."""
    for name, value in sorted(paths.items(), key=lambda kv: -len(str(kv[1]))):
        data = data.replace(os.fspath(value).encode(), f"<{name}>".encode())
    return data

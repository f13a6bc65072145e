"""Cross-check against a JavaScript implementation of the recipe (SPEC F-6).

The reference is a Node program; JavaScript orders strings by UTF-16 code units natively.
``tests/support/inventory_ref.mjs`` is our own small implementation in that language, so
agreement here checks factory's ordinal key and line format against the recipe's home
semantics, not against Python's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_factory
from tests.support.inventory_ref import write

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH")
SCRIPT = Path(__file__).parents[1] / "support" / "inventory_ref.mjs"


def node_digest(root: Path) -> bytes:
    assert NODE is not None
    proc = subprocess.run(
        [NODE, str(SCRIPT), "--root", str(root)], capture_output=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_tricky_tree_matches_javascript_byte_for_byte(tmp_path: Path) -> None:
    names = [
        "with space.txt",
        "café.txt",
        "cafe\u0301.txt",
        "\uff61.txt",
        "\U0001f600.txt",
        "\U0001f600\uff61/\uffff",
        "\ue000-private",
        "README",
        "readme",
        "B",
        "Z",
        "_",
        "a",
        "pipe|name",
        "back\\slash",
        "crlf.txt",
        "sub/node_modules",
        "sub/.git",
        "深/層/ファイル.md",
    ]
    for i, name in enumerate(names):
        write(tmp_path, name, f"line {i}\r\n" if "crlf" in name else f"line {i}\n")
    write(tmp_path, "empty", b"")
    (tmp_path / "empty-folder").mkdir()
    write(tmp_path, ".git/HEAD", "x")
    write(tmp_path, "deep/b/node_modules/m/index.js", "x")
    write(tmp_path, "big.bin", bytes(range(256)) * 9000)
    ours = run_factory(["digest", "--root", str(tmp_path)])
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == node_digest(tmp_path)


def test_many_files_match_javascript(tmp_path: Path) -> None:
    for i in range(400):
        write(tmp_path, f"d{i % 9}/{chr(0x41 + i % 58)}{i}", f"{i}" * (i % 17))
    assert run_factory(["digest", "--root", str(tmp_path)]).stdout == node_digest(tmp_path)


def test_javascript_twin_differs_when_content_differs(tmp_path: Path) -> None:
    # Control: the comparison is not vacuous.
    write(tmp_path / "one", "a.txt", "x\n")
    write(tmp_path / "two", "a.txt", "x\r\n")
    assert (
        node_digest(tmp_path / "one").splitlines()[-1]
        != (node_digest(tmp_path / "two").splitlines()[-1])
    )

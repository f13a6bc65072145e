"""`factory digest --json` reports case-fold/NFC collisions beside the digest (issue 8 §6);
the digest is the recipe's, with or without them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_factory
from tests.support.inventory_ref import reference_digest, write


def digest_json(root: Path) -> dict[str, object]:
    proc = run_factory(["digest", "--root", str(root), "--json"])
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert isinstance(value, dict)
    return value


def test_collisions_are_listed_and_the_digest_is_unchanged(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "a\n")
    write(tmp_path, "readme.md", "b\n")
    write(tmp_path, "caf\u00e9/x", "c\n")
    write(tmp_path, "cafe\u0301/x", "d\n")
    out = digest_json(tmp_path)
    assert out["digest"] == reference_digest(tmp_path)
    assert out["collisions"] == [
        {"kind": "case-fold", "paths": ["README.md", "readme.md"]},
        {"kind": "nfc", "paths": ["cafe\u0301", "caf\u00e9"]},
    ]


def test_twin_no_collision_an_empty_list_and_the_same_digest(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "a\n")
    write(tmp_path, "other.md", "b\n")
    out = digest_json(tmp_path)
    assert out["collisions"] == [] and out["digest"] == reference_digest(tmp_path)

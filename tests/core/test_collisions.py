"""Case-fold and NFC collision groups (issue 8 §6)."""

from __future__ import annotations

from factory.collisions import CollisionGroup, collision_groups


def test_case_and_normalisation_collisions_are_grouped() -> None:
    paths = ["README.md", "readme.md", "caf\u00e9.txt", "cafe\u0301.txt", "src/a.py"]
    assert collision_groups(paths) == [
        CollisionGroup("case-fold", ("README.md", "readme.md")),
        CollisionGroup("nfc", ("cafe\u0301.txt", "caf\u00e9.txt")),
    ]


def test_a_folder_collision_is_reported_once() -> None:
    groups = collision_groups(["Src/a.py", "src/a.py", "src/b.py"])
    assert groups == [CollisionGroup("case-fold", ("Src", "src"))]


def test_twin_distinct_names_and_bytes_paths() -> None:
    assert collision_groups([b"a.txt", b"b.txt", b"dir/a.txt", b"bad\xff"]) == []
    assert collision_groups([b"A.txt", b"a.txt"]) == [
        CollisionGroup("case-fold", ("A.txt", "a.txt"))
    ]

"""The whole-tree binding (SPEC A-5): everything but the top-level .git, never following."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.agent import binding
from factory.agent.binding import bind_tree, changed_paths


def make(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("x")
    (root / "node_modules" / "a" / ".git").mkdir(parents=True)
    (root / "node_modules" / "a" / ".git" / "config").write_text("nested")
    (root / "node_modules" / "a" / "i.js").write_text("1")
    (root / "ignored.log").write_text("log")
    (root / "Z.txt").write_text("z")
    (root / "a.txt").write_text("a")
    (root / "é.txt").write_text("e")
    (root / "link").symlink_to("/etc/passwd")
    os.mkfifo(root / "fifo")
    return root


def test_binds_everything_but_the_top_git(tmp_path: Path) -> None:
    b = bind_tree(make(tmp_path))
    names = list(b.entries)
    assert b".git" not in names and not any(n.startswith(b".git/") for n in names)
    assert b"node_modules/a/.git/config" in names and b"ignored.log" in names
    assert b.entries[b"link"].kind == "l"
    assert bytes.fromhex(b.entries[b"link"].content) == b"/etc/passwd"  # target, not content
    assert b.entries[b"fifo"].kind == "o"  # recorded, never opened (the test would hang)


def test_digest_is_stable_and_order_is_bytewise(tmp_path: Path) -> None:
    root = make(tmp_path)
    a, b = bind_tree(root), bind_tree(root)
    assert a.digest == b.digest
    assert sorted(a.entries) == sorted(a.entries, key=lambda p: p)  # bytes order, no locale
    assert sorted(a.entries).index(b"Z.txt") < sorted(a.entries).index(b"a.txt")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "ignored.log").write_text("LOG"),
        lambda r: (r / "node_modules" / "a" / "new.js").write_text("2"),
        lambda r: (r / "link").unlink() or (r / "link").symlink_to("/etc/hosts"),
        lambda r: (r / "a.txt").chmod(0o700),
        lambda r: (r / "Z.txt").unlink(),
        lambda r: (r / "node_modules" / "a" / ".git" / "config").write_text("NESTED"),
    ],
    ids=["ignored", "node_modules", "symlink-target", "mode", "delete", "nested-git"],
)
def test_every_change_is_seen_even_with_the_stat_cache(tmp_path: Path, change: object) -> None:
    root = make(tmp_path)
    before = bind_tree(root)
    change(root)  # type: ignore[operator]
    after = bind_tree(root, before)
    assert changed_paths(before, after) and after.digest != before.digest


def test_negative_control_no_change_same_digest_with_cache(tmp_path: Path) -> None:
    root = make(tmp_path)
    before = bind_tree(root)
    (root / ".git" / "HEAD").write_text("top-level .git is not bound")
    after = bind_tree(root, before)
    assert changed_paths(before, after) == [] and after.digest == before.digest


def test_same_size_same_tick_write_is_not_hidden_by_the_cache(tmp_path: Path) -> None:
    root = make(tmp_path)
    target = root / "a.txt"
    before = bind_tree(root)
    st = target.stat()
    target.write_text("b")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime; ctime may tie too
    after = bind_tree(root, before)
    assert changed_paths(before, after) == [b"a.txt"]


def test_cache_is_used_for_old_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make(tmp_path)
    before = bind_tree(root)
    aged = binding.Bound(before.entries, before.digest, before.started_ns + 10 * 10**9)
    calls: list[bytes] = []
    real = binding._read_digest

    def spy(dfd: int, name: bytes) -> str:
        calls.append(name)
        return real(dfd, name)

    monkeypatch.setattr(binding, "_read_digest", spy)
    bind_tree(root, aged)
    assert calls == []
    bind_tree(root, before)  # files younger than the margin are re-hashed
    assert b"a.txt" in calls


def test_non_utf8_names_are_bound(tmp_path: Path) -> None:
    root = tmp_path / "n"
    root.mkdir()
    (root / os.fsdecode(b"bad\xff")).write_text("x")
    assert b"bad\xff" in bind_tree(root).entries


def test_large_and_growing_files_hash_like_sha256(tmp_path: Path) -> None:
    import hashlib

    root = tmp_path / "big"
    root.mkdir()
    data = os.urandom(3 * (1 << 20) + 7)
    (root / "big.bin").write_bytes(data)
    (root / "small.bin").write_bytes(b"abc")
    b = bind_tree(root)
    assert b.entries[b"big.bin"].content == hashlib.sha256(data).hexdigest()
    assert b.entries[b"small.bin"].content == hashlib.sha256(b"abc").hexdigest()
    assert b.entries[b"big.bin"].size == len(data)

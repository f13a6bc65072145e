"""Many changed blobs are written as one pack by ``git fast-import`` (factory/gitio/
blobstore.py ``pack_blobs``): the same tree and bytes as ``hash-object`` writes, no
filter run, and the ids git computed are still checked against the bytes hashed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from factory.gitio import blobstore, gitdata
from factory.gitio import snapshot as snap
from factory.gitio.rawfs import RawChanged
from factory.gitio.run import GitFailure
from tests.support.git import git, init_repo

N = blobstore.PACK_FROM_BLOBS + 20


def _repo(tmp_path: Path, name: str) -> Path:
    files = {f"src/f{i:03d}.txt": f"line {i}\n" for i in range(N)}
    repo = init_repo(tmp_path / name, {**files, ".gitattributes": "* filter=m\n"})
    mark = tmp_path / f"{name}-filter-ran"
    script = tmp_path / "clean.sh"
    script.write_text('#!/bin/sh\n: > "$1"\ncat\n')
    script.chmod(0o755)
    git(repo, "config", "filter.m.clean", f"{script} {mark}")
    for i in range(N):  # CRLF and a NUL: bytes no conversion may touch
        (repo / f"src/f{i:03d}.txt").write_bytes(b"line %d\r\nchanged\0\r\n" % i)
    return repo


def _head_tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def _loose(repo: Path, oid: str) -> bool:
    return (repo / ".git" / "objects" / oid[:2] / oid[2:]).exists()


def test_many_blobs_go_into_one_pack_with_the_same_tree_as_loose_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed_repo, loose_repo = _repo(tmp_path, "packed"), _repo(tmp_path, "loose")
    packed = snap.snapshot(packed_repo, _head_tree(packed_repo))
    with monkeypatch.context() as m:
        m.setattr(blobstore, "PACK_FROM_BLOBS", 10**9)  # the twin: hash-object, loose objects
        loose = snap.snapshot(loose_repo, _head_tree(loose_repo))
    assert len(packed.changes) == N and packed.tree == loose.tree
    first = packed.changes[0].oid
    assert not _loose(packed_repo, first) and _loose(loose_repo, first)
    assert list((packed_repo / ".git" / "objects" / "pack").glob("pack-*.pack"))
    shown = subprocess.run(
        ["git", "cat-file", "blob", f"{packed.tree}:src/f007.txt"],
        cwd=packed_repo,
        capture_output=True,
        check=True,
    ).stdout
    assert shown == b"line 7\r\nchanged\0\r\n"
    assert not (tmp_path / "packed-filter-ran").exists()
    again = snap.snapshot(packed_repo, _head_tree(packed_repo))  # objects there: no new pack
    assert again.tree == packed.tree
    assert len(list((packed_repo / ".git" / "objects" / "pack").glob("pack-*.pack"))) == 1


def test_a_file_that_changes_before_it_is_packed_fails_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, "racing")
    real = blobstore.read_raw

    def rewritten(root: Path, path: bytes, limit: int) -> bytes:
        data = real(root, path, limit)
        return data + b"late write" if path.endswith(b"f050.txt") else data

    monkeypatch.setattr(blobstore, "read_raw", rewritten)
    with pytest.raises(RawChanged):
        snap.snapshot(repo, _head_tree(repo))


def test_a_symlink_swapped_in_before_packing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, "swapped")
    secret = tmp_path / "outside.txt"
    secret.write_bytes(b"not in the repository\n")
    real = blobstore.pack_blobs

    def swap_then_pack(root: Path, files: list[snap.Change]) -> list[str]:
        target = root / "src" / "f010.txt"
        target.unlink()
        os.symlink(secret, target)
        return real(root, files)

    monkeypatch.setattr(blobstore, "pack_blobs", swap_then_pack)
    with pytest.raises(RawChanged):
        snap.snapshot(repo, _head_tree(repo))


def test_without_the_patch_the_tree_is_the_same_and_still_cross_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, "nopatch")
    full = snap.snapshot(repo, _head_tree(repo))
    lean = snap.snapshot(repo, _head_tree(repo), with_patch=False)
    assert lean.tree == full.tree and lean.changes == full.changes
    assert lean.patch == b"" and full.patch.startswith(b"diff --git")
    monkeypatch.setattr(gitdata, "diff_entries", lambda *_: {})  # git names nothing
    with pytest.raises(GitFailure, match="does not match"):
        snap.snapshot(repo, _head_tree(repo), with_patch=False)

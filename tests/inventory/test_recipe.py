"""``factory digest`` matches the recipe on every tree of the issue (SPEC F-6)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_factory
from tests.support.inventory_ref import (
    reference_digest,
    reference_document,
    utf16_units,
    write,
)

EMPTY_SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def digest_of(root: Path, *extra: str) -> dict[str, str]:
    proc = run_factory(["digest", "--root", str(root), *extra])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode("utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines)


def hexdigest(fields: dict[str, str]) -> str:
    recipe, hexd = fields["digest"].split(" ")
    assert recipe == "ordinal-path-bytes-sha256/1"
    return hexd


def test_golden_single_file_tree(tmp_path: Path) -> None:
    write(tmp_path, "a", "x")
    doc = "a|1|2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    assert reference_document(tmp_path) == doc.encode()
    fields = digest_of(tmp_path)
    assert hexdigest(fields) == hashlib.sha256(doc.encode()).hexdigest()
    assert fields["count"] == "1"
    assert fields["bytes"] == "1"


def test_empty_tree(tmp_path: Path) -> None:
    fields = digest_of(tmp_path)
    assert (fields["count"], fields["bytes"], hexdigest(fields)) == ("0", "0", EMPTY_SHA)


def test_crlf_and_lf_copies_are_different_trees(tmp_path: Path) -> None:
    lf, crlf = tmp_path / "lf", tmp_path / "crlf"
    write(lf, "notes/a.txt", "one\ntwo\n")
    write(crlf, "notes/a.txt", "one\r\ntwo\r\n")
    d_lf, d_crlf = digest_of(lf), digest_of(crlf)
    assert hexdigest(d_lf) == reference_digest(lf)
    assert hexdigest(d_crlf) == reference_digest(crlf)
    assert hexdigest(d_lf) != hexdigest(d_crlf)
    assert (d_lf["bytes"], d_crlf["bytes"]) == ("8", "10")


NAMES = [
    "with space.txt",
    "café.txt",  # precomposed U+00E9
    "cafe\u0301.txt",  # e + combining acute: a different name, different bytes
    "\uff61.txt",  # U+FF61, in the BMP
    "\U0001f600.txt",  # outside the BMP: surrogates 0xD83D 0xDE00 sort before 0xFF61
    "README",
    "readme",
    "ReadMe",
    "B",
    "Z",
    "_",
    "a",
    "pipe|in|name.txt",
    "back\\slash",
    "dir with space/ünïcödé/\U0001f680 rocket.md",
    "-leading-dash",
    "#hash",
]


def test_names_sorted_by_utf16_code_units(tmp_path: Path) -> None:
    for i, name in enumerate(NAMES):
        write(tmp_path, name, f"content {i}\n")
    fields = digest_of(tmp_path)
    assert hexdigest(fields) == reference_digest(tmp_path)
    assert fields["count"] == str(len(NAMES))

    manifest = tmp_path.parent / "manifest.txt"
    digest_of(tmp_path, "--manifest", str(manifest))
    paths = [line.rsplit("|", 2)[0] for line in manifest.read_text("utf-8").splitlines()]
    assert paths == sorted(NAMES, key=utf16_units)
    # The cases that make this recipe differ from naive orders:
    assert paths.index("\U0001f600.txt") < paths.index("\uff61.txt")  # not code points
    assert sorted(["\U0001f600.txt", "\uff61.txt"]) == ["\uff61.txt", "\U0001f600.txt"]
    assert paths.index("B") < paths.index("Z") < paths.index("_") < paths.index("a")
    assert paths.index("README") < paths.index("ReadMe") < paths.index("readme")
    assert "pipe|in|name.txt" in paths and "back\\slash" in paths


def test_excluded_folders_at_several_depths_and_files_with_those_names(tmp_path: Path) -> None:
    write(tmp_path, "keep.txt", "k")
    for rel in [
        ".git/HEAD",
        ".git/objects/ab/cdef",
        "pkg/.git/config",
        "a/b/c/.git/index",
        "node_modules/left-pad/index.js",
        "pkg/node_modules/x/package.json",
        "a/b/node_modules/.bin/tool",
    ]:
        write(tmp_path, rel, "excluded")
    included = [
        "sub/node_modules",  # a regular FILE named node_modules is included
        "node_modules.txt",
        "other/.git",  # a .git FILE (as in a linked worktree) is included
        ".github/workflows/ci.yml",
        "node_modules2/x",
        "a/.gitignore",
    ]
    for rel in included:
        write(tmp_path, rel, "included " + rel)
    fields = digest_of(tmp_path)
    assert hexdigest(fields) == reference_digest(tmp_path)
    assert fields["count"] == str(1 + len(included))

    # The excluded content really does not count: change it, the digest stays.
    write(tmp_path, "a/b/c/.git/index", "changed")
    write(tmp_path, "pkg/node_modules/x/package.json", "changed")
    assert hexdigest(digest_of(tmp_path)) == hexdigest(fields)
    # The included file named node_modules does count.
    write(tmp_path, "sub/node_modules", "changed")
    assert hexdigest(digest_of(tmp_path)) != hexdigest(fields)


def test_empty_files_and_empty_folders(tmp_path: Path) -> None:
    plain, with_dirs = tmp_path / "plain", tmp_path / "dirs"
    for root in (plain, with_dirs):
        write(root, "empty", b"")
        write(root, "sub/also-empty", b"")
        write(root, "sub/one", b"1")
    for rel in ["void", "sub/void/deeper", "x/y/z"]:
        (with_dirs / rel).mkdir(parents=True)
    d_plain, d_dirs = digest_of(plain), digest_of(with_dirs)
    assert hexdigest(d_plain) == reference_digest(plain)
    assert hexdigest(d_plain) == hexdigest(d_dirs)  # empty folders contribute nothing
    assert (d_plain["count"], d_plain["bytes"]) == ("3", "1")
    assert f"empty|0|{EMPTY_SHA}".encode() in reference_document(plain)


def test_digest_does_not_depend_on_location_or_how_root_is_named(tmp_path: Path) -> None:
    first = tmp_path / "first"
    write(first, "a/b.txt", "b")
    write(first, "c.txt", "c")
    second = tmp_path / "elsewhere" / "second"
    shutil.copytree(first, second)
    alias = tmp_path / "alias"
    alias.symlink_to(first)  # a root given through a symlink is followed (it is the root)
    d1 = digest_of(first)
    assert hexdigest(digest_of(second)) == hexdigest(d1)
    assert hexdigest(digest_of(alias)) == hexdigest(d1)
    proc = run_factory(["digest", "--root", "first/../first/a/.."], cwd=tmp_path)
    assert proc.returncode == 0
    assert hexdigest(dict(x.split("=", 1) for x in proc.stdout.decode().splitlines())) == (
        hexdigest(d1)
    )


def test_default_root_is_current_folder(tmp_path: Path) -> None:
    write(tmp_path, "x", "y")
    proc = run_factory(["digest"], cwd=tmp_path)
    assert proc.returncode == 0
    fields = dict(x.split("=", 1) for x in proc.stdout.decode().splitlines())
    assert fields["root"] == str(tmp_path)
    assert hexdigest(fields) == reference_digest(tmp_path)


def test_chunk_boundaries_and_many_files(tmp_path: Path) -> None:
    mib = 1 << 20
    rng = hashlib.sha256(b"seed").digest()
    block = (rng * (mib // len(rng) + 1))[: 3 * mib + 7]
    for size in [0, 1, 4095, 4096, 4097, mib - 1, mib, mib + 1, 3 * mib + 7]:
        write(tmp_path, f"sizes/{size}.bin", block[:size])
    for i in range(600):
        write(tmp_path, f"many/{i % 7}/{i:04d}.txt", f"file {i}\n" * (i % 13))
    fields = digest_of(tmp_path)
    assert hexdigest(fields) == reference_digest(tmp_path)
    assert fields["count"] == str(9 + 600)


def test_git_repository_working_tree(tmp_path: Path) -> None:
    from tests.support.git import init_repo

    repo = init_repo(tmp_path / "repo", {"README.md": "hi\n", "src/x.py": "print(1)\n"})
    fields = digest_of(repo)
    assert fields["count"] == "2"
    assert hexdigest(fields) == reference_digest(repo)
    subprocess.run(["git", "gc", "-q"], cwd=repo, check=True)  # .git changes, digest does not
    assert hexdigest(digest_of(repo)) == hexdigest(fields)


# --- output shape ------------------------------------------------------------------------


def test_text_output_lines_exactly(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "a.txt", "hello\n")
    proc = run_factory(["digest", "--root", str(tree)])
    assert proc.returncode == 0
    expected = (
        "format=inventory-digest/1\n"
        f"root={tree}\n"
        "count=1\n"
        "bytes=6\n"
        f"digest=ordinal-path-bytes-sha256/1 {reference_digest(tree)}\n"
    )
    assert proc.stdout.decode() == expected
    assert proc.stderr == b""


def test_manifest_writes_document_plus_lf_and_reports_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "b.txt", "b")
    write(tree, "a/c.txt", "c\r\n")
    (tmp_path / "out").mkdir()
    manifest = tmp_path / "out" / "manifest.txt"
    proc = run_factory(["digest", "--root", str(tree), "--manifest", str(manifest)])
    assert proc.returncode == 0, proc.stderr
    assert manifest.read_bytes() == reference_document(tree) + b"\n"
    lines = proc.stdout.decode().splitlines()
    assert [line.split("=", 1)[0] for line in lines] == [
        "format",
        "root",
        "count",
        "bytes",
        "manifest",
        "digest",
    ]
    assert lines[4] == f"manifest={manifest}"
    assert lines[5].endswith(hashlib.sha256(manifest.read_bytes()[:-1]).hexdigest())


def test_manifest_that_exists_is_refused_and_untouched(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "a", "a")
    manifest = tmp_path / "m.txt"
    manifest.write_bytes(b"precious")
    proc = run_factory(["digest", "--root", str(tree), "--manifest", str(manifest)])
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"factory: output-exists:" in proc.stderr
    assert manifest.read_bytes() == b"precious"


def test_print_manifest_prints_document_then_summary(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "z", "z")
    write(tree, "y/\U0001f600", "smile")
    proc = run_factory(["digest", "--root", str(tree), "--print-manifest"])
    assert proc.returncode == 0
    doc = reference_document(tree)
    assert proc.stdout.startswith(doc + b"\nformat=inventory-digest/1\n")
    assert proc.stdout.endswith(f"{reference_digest(tree)}\n".encode())


def test_json_output_shape(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "é", "e")
    proc = run_factory(["digest", "--root", str(tree), "--json"])
    assert proc.returncode == 0
    assert proc.stdout.endswith(b"}\n") and proc.stdout.count(b"\n") == 1
    obj = json.loads(proc.stdout)
    assert obj == {
        "format": "inventory-digest/1",
        "recipe": "ordinal-path-bytes-sha256/1",
        "root": str(tree),
        "count": 1,
        "bytes": 1,
        "digest": reference_digest(tree),
        "collisions": [],
    }
    manifest = tmp_path / "m"
    with_manifest = run_factory(
        ["digest", "--root", str(tree), "--json", "--manifest", str(manifest)]
    )
    assert json.loads(with_manifest.stdout)["manifest"] == str(manifest)
    assert os.path.exists(manifest)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_in_process_worker_counts_agree(tmp_path: Path, workers: int) -> None:
    from factory.inventory.service import digest_tree

    for i in range(300):
        write(tmp_path / "t", f"d{i % 5}/f{i}", os.urandom(i * 37))
    result = digest_tree(tmp_path / "t", workers=workers)
    assert result.digest == reference_digest(tmp_path / "t")
    assert result.document == reference_document(tmp_path / "t")

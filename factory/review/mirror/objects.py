"""One mirrored lineage as git objects, written and read with local git plumbing only.

A lineage's *entry* is the set of files the store holds for it, by path relative to the
lineage folder: ``review-state.json``, ``review-receipt.json`` (approved and escalated
only) and ``evidence/<role>-<sha256>`` for each blob the state binds by hash (the policy,
the final evidence or the evidence run's document and outputs, a recovery's maintainer
authorization). Raw lens answers are not bound by hash and stay local.

The entry is a tree; its commit has no parent, a fixed author and time, and the message
``factory.review-mirror/1 <lineage-id>``, so its id is a function of the entry alone. A
mirror commit that is not exactly that (another author, a parent, an extra file, a
symlink) is not a mirror entry: :func:`read_entry` says why, and nothing of it is used.
Every command runs through :func:`factory.gitio.run.run_git` (no repository-configured
program; blobs hashed with ``--no-filters``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from factory.documents.canonical import sha256_hex, tagged_sha256
from factory.gitio.gitdata import null_oid, object_format
from factory.gitio.run import run_git, try_git
from factory.review.documents import POLICY_TAG
from factory.review.receipt import RECEIPT_FILE
from factory.review.record import RECORD_LIMIT, read_nofollow
from factory.review.state import ReviewState
from factory.review.store import STATE_FILE, Loaded, ReviewStore

NAMESPACE = "refs/factory/review/v1/"
SCHEMA = "factory.review-mirror/1"
IDENTITY = "factory review mirror <review-mirror@factory.invalid> 0 +0000"
ENTRY_LIMIT = 256 << 20
_EVIDENCE = re.compile(r"^evidence/[a-z][a-z0-9-]*-[0-9a-f]{64}$")

Files = dict[str, bytes]


def bound_blobs(store: ReviewStore, state: ReviewState) -> list[tuple[str, str]]:
    """(role, sha256) of every evidence blob ``state`` binds by hash."""
    lid = state.lineage_id
    out = []
    for path in store.blobs(lid, "policy"):
        sha = path.name.split("-", 1)[1]
        if tagged_sha256(POLICY_TAG, store.read_blob(lid, "policy", sha)) == state.policy_hash:
            out.append(("policy", sha))
            break
    fe = state.final_evidence
    if fe is not None and fe.run is None:
        out.append(("final-evidence", fe.sha256))
    elif fe is not None and fe.run is not None:
        out.append(("evidence-run", fe.sha256))
        out.append(("evidence-stdout", fe.run.stdout_sha256))
        out.append(("evidence-stderr", fe.run.stderr_sha256))
    pred = state.predecessor
    if pred is not None and pred.authorization_sha256 is not None:
        out.append(("recovery-authorization", pred.authorization_sha256))
    return out


def entry_files(store: ReviewStore, loaded: Loaded) -> Files:
    """The files of ``loaded``'s entry, read from the store (blobs checked by name).

    Raises:
        ReviewRecordCorrupt: a bound blob is missing or does not hash to its name.
    """
    folder = store.root / loaded.lineage_id
    files = {STATE_FILE: read_nofollow(folder / STATE_FILE, RECORD_LIMIT)}
    if loaded.receipt == "ok":
        files[RECEIPT_FILE] = read_nofollow(folder / RECEIPT_FILE, 1 << 20)
    for role, sha in bound_blobs(store, loaded.state):
        files[f"evidence/{role}-{sha}"] = store.read_blob(loaded.lineage_id, role, sha)
    return files


def _blob(root: Path, data: bytes) -> str:
    out = run_git(
        root, ["hash-object", "-w", "--no-filters", "--stdin"], stdin=data, what="hash-object"
    )
    return out.decode().strip()


def _tree(root: Path, rows: list[tuple[str, str, str, str]]) -> str:
    body = b"".join(f"{m} {t} {o}\t{n}".encode() + b"\0" for m, t, o, n in sorted(rows))
    return run_git(root, ["mktree", "-z"], stdin=body, what="mktree").decode().strip()


def commit_bytes(tree: str, lineage_id: str) -> bytes:
    """The one commit a mirror entry with ``tree`` can be."""
    return (
        f"tree {tree}\nauthor {IDENTITY}\ncommitter {IDENTITY}\n\n{SCHEMA} {lineage_id}\n"
    ).encode()


def write_entry(root: Path, lineage_id: str, files: Mapping[str, bytes]) -> str:
    """Write ``files`` as a mirror entry's objects; return its commit id."""
    top: list[tuple[str, str, str, str]] = []
    evidence: list[tuple[str, str, str, str]] = []
    for name, data in files.items():
        oid = _blob(root, data)
        if name.startswith("evidence/"):
            evidence.append(("100644", "blob", oid, name.removeprefix("evidence/")))
        else:
            top.append(("100644", "blob", oid, name))
    if evidence:
        top.append(("040000", "tree", _tree(root, evidence), "evidence"))
    tree = _tree(root, top)
    data = commit_bytes(tree, lineage_id)
    out = run_git(
        root, ["hash-object", "-t", "commit", "-w", "--stdin"], stdin=data, what="hash-object"
    )
    return out.decode().strip()


def _cat(root: Path, kind: str, oid: str) -> bytes | None:
    code, out = try_git(root, ["cat-file", kind, oid])
    return out if code == 0 else None


def read_entry(root: Path, lineage_id: str, commit: str) -> tuple[Files, str | None]:
    """The files of the mirror entry ``commit``, or what makes it not one."""
    if _cat(root, "-t", commit) != b"commit\n":
        return {}, "the ref does not name a commit"
    raw = _cat(root, "commit", commit) or b""
    tree = raw[5:].split(b"\n", 1)[0].decode("ascii", "replace")
    if raw != commit_bytes(tree, lineage_id):
        return {}, "the commit is not the mirror commit of its tree (author, parent or message)"
    listing = run_git(root, ["ls-tree", "-r", "-z", "-l", tree], what="ls-tree")
    files: Files = {}
    total = 0
    for row in listing.split(b"\0"):
        if not row:
            continue
        meta, name = row.split(b"\t", 1)
        mode, kind, oid, size = meta.decode().split()
        path = name.decode("utf-8", "replace")
        allowed = path in (STATE_FILE, RECEIPT_FILE) or _EVIDENCE.fullmatch(path)
        if mode != "100644" or kind != "blob" or not allowed:
            return {}, f"unexpected entry {path[:80]!r} (mode {mode})"
        total += int(size)
        if total > ENTRY_LIMIT:
            return {}, "the entry is larger than 256 MiB"
        files[path] = _cat(root, "blob", oid) or b""
    for path, data in files.items():
        if path.startswith("evidence/") and path[-64:] != sha256_hex(data):
            return {}, f"{path} does not hash to its name"
    return files, None


def list_refs(root: Path, prefix: str = NAMESPACE) -> dict[str, str]:
    """Ref name (without ``prefix``) → object id, for every ref under ``prefix``."""
    out = run_git(
        root, ["for-each-ref", "--format=%(refname) %(objectname)", prefix], what="for-each-ref"
    )
    refs = {}
    for line in out.decode("utf-8", "replace").splitlines():
        name, oid = line.rsplit(" ", 1)
        refs[name.removeprefix(prefix)] = oid
    return refs


def create_ref(root: Path, ref: str, oid: str) -> bool:
    """Create ``ref`` at ``oid`` only if it does not exist (compare-and-swap against the
    null id); False when it appeared meanwhile."""
    zero = null_oid(object_format(root))
    code, _ = try_git(root, ["update-ref", "--no-deref", ref, oid, zero])
    return code == 0


def delete_ref(root: Path, ref: str) -> None:
    try_git(root, ["update-ref", "--no-deref", "-d", ref])

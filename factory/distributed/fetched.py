"""The coordinator's side of a bundle: fetch the ref a worker named, check the bundle's
shape, lay its receipt and evidence out in a folder of the batch, and verify the receipt
there with the same code as ``factory receipt verify``.

A worker's claim is never taken: a ref the remote lacks, a bundle of another shape, a
receipt whose revision is not the one in the ref's name, or one that does not verify, make
the task ``failed`` with the reason (:class:`Checked`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from factory.distributed.bundle import (
    BUNDLE_INVALID,
    BUNDLE_MISSING,
    CANDIDATE_DIR,
    EVIDENCE_DIR,
    RECEIPT_NAME,
    REMOTE_SAFETY,
    RUNS_NAMESPACE,
)
from factory.errors import FactoryError
from factory.gitio.run import run_git, try_git

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_REF = re.compile(re.escape(RUNS_NAMESPACE) + r"/([A-Za-z0-9][A-Za-z0-9._-]{0,63})/([0-9a-f]{64})")


@dataclass(frozen=True, slots=True)
class Checked:
    """A fetched bundle's verdict: ``receipt`` laid out and verified, or why not."""

    ok: bool
    receipt: Path | None
    revision: str | None
    outcome: str | None  # the receipt's own status, once it verified
    reason: str | None


def ensure_cache(cache: Path) -> None:
    """A bare repository of factory's own for fetched bundles (made once)."""
    if not (cache / "HEAD").exists():
        cache.mkdir(parents=True, exist_ok=True)
        run_git(cache, ["init", "--bare", "--quiet", "--template=", "."], what="git init")


def fetch_ref(cache: Path, url: str, ref: str) -> str:
    """Fetch ``ref`` from ``url`` into ``cache`` under the same name; its commit id.

    A ref already in the cache with another value is refused by git (no ``+``): the
    namespace is content-addressed, so that can only be a conflict.
    """
    if not _REF.fullmatch(ref):
        raise BUNDLE_INVALID("the worker named a ref outside refs/factory/runs/<task>/<hex>")
    ensure_cache(cache)
    args = [
        *REMOTE_SAFETY,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--upload-pack=git-upload-pack",
        url,
        f"{ref}:{ref}",
    ]
    code, _ = try_git(cache, args)
    if code != 0:
        raise BUNDLE_MISSING(f"{ref} could not be fetched from the remote")
    return run_git(cache, ["rev-parse", "--verify", f"{ref}^{{commit}}"]).decode().strip()


def _entries(cache: Path, tree: str) -> list[tuple[str, str, str, str]]:
    out = run_git(cache, ["ls-tree", "-z", "--full-tree", tree], what="git ls-tree")
    entries = []
    for item in out.split(b"\0"):
        if not item:
            continue
        meta, _, name = item.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split(" ")
        entries.append((mode, kind, oid, name.decode("utf-8", "surrogateescape")))
    return entries


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def lay_out(cache: Path, commit: str, dest: Path) -> tuple[Path, str | None]:
    """Write the bundle's receipt and evidence into the new folder ``dest``; returns the
    receipt path and the candidate tree the bundle carries (None when it has none)."""
    top = {name: (mode, kind, oid) for mode, kind, oid, name in _entries(cache, commit)}
    allowed = {RECEIPT_NAME: "blob", EVIDENCE_DIR: "tree", CANDIDATE_DIR: "tree"}
    if set(top) - set(allowed) or RECEIPT_NAME not in top:
        raise BUNDLE_INVALID("the bundle's tree is not receipt, evidence and candidate")
    if any(top[n][1] != kind for n, kind in allowed.items() if n in top):
        raise BUNDLE_INVALID("an entry of the bundle has the wrong type")
    if top[RECEIPT_NAME][0] != "100644":
        raise BUNDLE_INVALID("the receipt is not a regular file in the bundle")
    dest.mkdir(parents=True)
    receipt = dest / RECEIPT_NAME
    _write_new(receipt, _blob(cache, top[RECEIPT_NAME][2]))
    if EVIDENCE_DIR in top:
        (dest / EVIDENCE_DIR).mkdir()
        for mode, kind, oid, name in _entries(cache, top[EVIDENCE_DIR][2]):
            if mode != "100644" or kind != "blob" or not _NAME.fullmatch(name):
                raise BUNDLE_INVALID("an evidence entry is not a plain file with a plain name")
            _write_new(dest / EVIDENCE_DIR / name, _blob(cache, oid))
    return receipt, top[CANDIDATE_DIR][2] if CANDIDATE_DIR in top else None


def _blob(cache: Path, oid: str) -> bytes:
    return run_git(cache, ["cat-file", "blob", oid], what="git cat-file")


def check_bundle(cache: Path, url: str, ref: str, claimed: str | None, dest: Path) -> Checked:
    """Fetch, lay out and verify one task's bundle; never raises for a bad bundle."""
    from factory.agent.verify import failed_checks, load_receipt, verify

    try:
        commit = fetch_ref(cache, url, ref)
        receipt_path, carried = lay_out(cache, commit, dest)
        receipt, _ = load_receipt(receipt_path)
    except FactoryError as exc:
        return Checked(False, None, None, None, f"{exc.code}: {exc.fact}")
    hexpart = ref.rsplit("/", 1)[1]
    if receipt.revision != f"sha256:{hexpart}" or (claimed and claimed != receipt.revision):
        return Checked(False, receipt_path, receipt.revision, None, "revision differs from the ref")
    final = receipt.final_candidate()
    if carried is not None and (final is None or final.body.candidate_tree != carried):
        return Checked(False, receipt_path, receipt.revision, None, "candidate tree differs")
    report = verify(receipt_path)
    if not report.ok:
        why = "; ".join(failed_checks(report)) or "the receipt does not verify"
        return Checked(False, receipt_path, receipt.revision, None, f"receipt-unverified: {why}")
    return Checked(True, receipt_path, receipt.revision, receipt.status, None)

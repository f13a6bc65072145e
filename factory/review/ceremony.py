"""Reclaim and repair ceremonies: taking an entry that fails today's validation out of the
store without changing a byte of it, and without teaching the validator an exception
(SPEC R: "repair of invalid history is a ceremony, never a relaxed validator").

Anomaly classes (:func:`census`), each its own proof class:

* ``incomplete-entry`` — a lineage folder without ``review-state.json`` (a crash of an old
  version, or a folder made by hand);
* ``invalid-record`` — a record that does not validate (it may have been valid when an
  older version wrote it);
* ``invalid-receipt`` — a valid record whose receipt file is not its derivation;
* ``invalid-recovery-edge`` — a recovery edge of the graph that does not hold
  (:mod:`factory.review.graph`); a fork is *one* anomaly whose members are the predecessor
  and its successors.

A ceremony moves one lineage folder aside in two phases, both byte-preserving:

1. **stage** — ``.quarantine/<ceremony>/ceremony.json`` records the intent, the anomaly,
   its proof and an inventory (path, size, SHA-256, mode of every file); then one
   ``rename`` moves the folder to ``.quarantine/<ceremony>/entry`` (no byte is rewritten);
2. **seal** — every file under ``entry`` is hashed again and must match the inventory;
   then ``audit.json`` (``factory.review-quarantine-audit/1``) is written exclusively.

A crash between the two leaves a staged ceremony; running the same command again finishes
it. ``reclaim`` handles ``incomplete-entry`` only and needs no authorization; ``repair``
handles every class, one anomaly at a time, only when the command names every other
anomaly of its class in the inventory (a documented patient, not an amnesty for a
category: see :mod:`factory.review.exits`), and only with the exact
maintainer authorization binding (:mod:`factory.review.authorization`). Validation code is
not touched by any of this: the quarantined record fails it exactly as before.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from factory.documents.canonical import canonical_bytes_plain, digest_plain, sha256_hex
from factory.fsio import fsync_dir, write_exclusive
from factory.review.errors import ReviewRecordCorrupt, ReviewRefused
from factory.review.graph import LineageGraph, build_graph
from factory.review.store import STATE_FILE, ReviewStore, decode_record

QUARANTINE = ".quarantine"
CEREMONY_SCHEMA: Final = "factory.review-ceremony/1"
AUDIT_SCHEMA: Final = "factory.review-quarantine-audit/1"
PROOF_TAG: Final = "factory.review-anomaly-proof/1"
CLASSES: Final = ("incomplete-entry", "invalid-record", "invalid-receipt", "invalid-recovery-edge")


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One anomaly of the inventory: its class, what identifies it, the lineages in it."""

    anomaly_class: str
    key: str
    members: tuple[str, ...]
    detail: str


def _has_record(store: ReviewStore, lineage_id: str) -> bool:
    return os.path.lexists(store.root / lineage_id / STATE_FILE)


def _corrupt_class(store: ReviewStore, lineage_id: str) -> str:
    folder = store.root / lineage_id
    if os.path.islink(folder) or os.path.islink(folder / "evidence"):
        return "invalid-record"  # a link is never followed: what it points at is not read
    if not _has_record(store, lineage_id):
        return "incomplete-entry"
    try:
        data = (store.root / lineage_id / STATE_FILE).read_bytes()
        decode_record(lineage_id, data)
    except (OSError, ReviewRecordCorrupt):
        return "invalid-record"
    return "invalid-receipt"


def census(store: ReviewStore, graph: LineageGraph) -> list[Anomaly]:
    """Every anomaly of the store, in a stable order."""
    out = [
        Anomaly(_corrupt_class(store, lid), lid, (lid,), c.error.fact)
        for lid, c in sorted(graph.corrupt.items())
    ]
    forks: dict[str, list[str]] = {}
    for p in graph.problems:
        if p.kind == "fork":
            forks.setdefault(p.detail, []).append(p.lineage_id)
        else:
            out.append(Anomaly("invalid-recovery-edge", p.lineage_id, (p.lineage_id,), p.detail))
    for detail, members in sorted(forks.items()):
        out.append(Anomaly("invalid-recovery-edge", f"fork:{members[0]}", tuple(members), detail))
    return out


def inventory(folder: Path) -> list[dict[str, Any]]:
    """Every entry under ``folder``: relative path, kind, size, SHA-256 and mode (symlinks
    are recorded by their target text, never followed)."""
    out: list[dict[str, Any]] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames) + [
            d for d in dirnames if os.path.islink(os.path.join(dirpath, d))
        ]:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                data = os.fsencode(os.readlink(path))
                kind = "symlink"
            elif stat.S_ISREG(st.st_mode):
                data = path.read_bytes()
                kind = "file"
            else:
                data, kind = b"", "special"
            out.append(
                {
                    "path": rel,
                    "kind": kind,
                    "bytes": len(data),
                    "sha256": sha256_hex(data),
                    "mode": stat.S_IMODE(st.st_mode),
                }
            )
    return sorted(out, key=lambda e: e["path"])


def proof_of(
    anomaly: Anomaly, census_: list[Anomaly], items: list[dict[str, Any]]
) -> dict[str, Any]:
    """The proof a ceremony records: the anomaly, how many of its class the inventory has,
    and the entry's inventory (hashed into ``proof_digest``)."""
    same = [a.key for a in census_ if a.anomaly_class == anomaly.anomaly_class]
    body = {
        "anomaly_class": anomaly.anomaly_class,
        "key": anomaly.key,
        "members": list(anomaly.members),
        "detail": anomaly.detail,
        "class_members_in_inventory": same,
        "inventory_sha256": sha256_hex(canonical_bytes_plain(items)),
    }
    return {**body, "proof_digest": digest_plain(PROOF_TAG, body)}


def record_revision(items: list[dict[str, Any]]) -> str:
    """What the authorization names as the revision of an entry that has none: the SHA-256
    of its record's raw bytes, or of its inventory when it has no record."""
    for e in items:
        if e["path"] == STATE_FILE and e["kind"] == "file":
            return "sha256:" + str(e["sha256"])
    return "sha256:" + sha256_hex(canonical_bytes_plain(items))


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _write_json(path: Path, doc: dict[str, Any]) -> bytes:
    data = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False).encode() + b"\n"
    write_exclusive(path, data, mode=0o600)
    fsync_dir(path.parent)
    return data


def pending(store: ReviewStore, lineage_id: str) -> Path | None:
    """A staged (unsealed) ceremony of ``lineage_id``, if a crash left one."""
    root = store.root / QUARANTINE
    if not root.is_dir():
        return None
    for name in sorted(os.listdir(root)):
        folder = root / name
        intent = folder / "ceremony.json"
        if (folder / "audit.json").exists() or not intent.is_file():
            continue
        try:
            doc = json.loads(intent.read_bytes())
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and doc.get("lineage_id") == lineage_id:
            return folder
    return None


def stage(store: ReviewStore, intent: dict[str, Any]) -> Path:
    """Phase 1: record the intent, then rename the lineage folder into the quarantine."""
    lid = intent["lineage_id"]
    folder = store.root / QUARANTINE / f"{_now().replace(':', '')}-{lid}-{secrets.token_hex(3)}"
    folder.mkdir(mode=0o700, parents=True)
    _write_json(folder / "ceremony.json", intent)
    os.rename(store.root / lid, folder / "entry")
    fsync_dir(folder)
    fsync_dir(store.root)
    return folder


def seal(folder: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """Phase 2: prove the moved bytes are the inventoried bytes, then write the audit."""
    intent = json.loads((folder / "ceremony.json").read_bytes())
    entry = folder / "entry"
    if not entry.exists():
        raise ReviewRefused(
            f"ceremony {folder.name} was staged but its entry was never moved; the lineage "
            f"folder is still in the store: rerun the same ceremony for {intent['lineage_id']}",
            next=("factory review status",),
        )
    now = inventory(entry)
    if now != intent["inventory"]:
        raise ReviewRecordCorrupt(
            f"ceremony {folder.name}: the quarantined bytes differ from the inventory taken "
            "before the move (kept as they are)"
        )
    audit = {
        "schema": AUDIT_SCHEMA,
        **{k: intent[k] for k in ("ceremony_id", "kind", "lineage_id", "proof", "actor", "reason")},
        "authorization_sha256": intent.get("authorization_sha256"),
        "inventory_verified": True,
        "staged_at": intent["staged_at"],
        "sealed_at": _now(),
        "location": f"{QUARANTINE}/{folder.name}/entry",
        **extra,
    }
    _write_json(folder / "audit.json", audit)
    return audit


def scan_graph(store: ReviewStore) -> LineageGraph:
    return build_graph(store.scan())

"""The gate memo: the facts of the last full validation of the store, keyed by every byte
that validation read (SPEC R; issue 13's speed target for hooks).

A gate at ``pre-commit`` runs on every commit. Loading the store means validating every
record with the review models, and building those models costs a new process more than the
whole budget of the hook. What the decision needs from the store, though, is small
(:class:`~factory.review.gates.facts.GraphFacts`), and it is a pure function of

* the bytes of each lineage folder's ``review-state.json`` and ``review-receipt.json``
  (or their absence), and which folders are lineages — :func:`inventory`;
* the code that validates them — :func:`code_identity` (every source file of the
  ``factory`` package by path, size and modification time, the interpreter, and the
  distributions installed beside it).

After a full validation under the store lock, the gate writes ``gate-memo.json`` at the
store root: ``{schema, key, graph}``, ``key`` the domain-separated SHA-256 of those inputs.
:func:`load` recomputes the key from the live store and returns the facts only when it is
the same; anything else (no memo, another key, a file that does not parse, an entry that
cannot be read) is a miss, and the caller validates in full. The memo is never authority
by itself: a hit replays the outcome of a validation of exactly these bytes by exactly
this code, and the gate still re-checks everything under the lock before answering.

It is as trustworthy as the store it sits in: whoever can write the store can write a
record that validates, and so can write a memo (declared in ``design/review-gates.md``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Final

from factory.filehash import digest_file
from factory.fsio import atomic_replace
from factory.review.gates.facts import GraphFacts
from factory.review.names import valid_lineage

MEMO_SCHEMA: Final = "factory.review-gate-memo/1"
MEMO_FILE: Final = "gate-memo.json"
#: The two files a load reads per lineage (the store's and the receipt's names; a test
#: checks they are the ones :mod:`factory.review.store` and the receipt use).
READ_FILES: Final = ("review-state.json", "review-receipt.json")
_PACKAGE = Path(__file__).resolve().parents[2]


@functools.cache
def code_identity() -> str:
    """A digest of the code a full validation runs: the ``factory`` sources (path, size,
    mtime), the interpreter's version and path, and the distributions of its environment."""
    h = hashlib.sha256(b"factory.review-gate-code/1\0")
    h.update(f"{sys.version}\0{sys.executable}\0".encode())
    _sources(h, str(_PACKAGE), "")
    for entry in sorted(set(sys.path)):
        if os.path.basename(entry) not in ("site-packages", "dist-packages"):
            continue  # the script's own folder differs between 'factory' and 'python -m'
        try:
            names = sorted(n for n in os.listdir(entry) if n.endswith(".dist-info"))
        except OSError:
            continue
        h.update(("\0".join([entry, *names]) + "\0").encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _sources(h: Any, folder: str, rel: str) -> None:
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if e.name != "__pycache__":
                _sources(h, e.path, f"{rel}{e.name}/")
        elif e.name.endswith(".py"):
            st = e.stat()
            h.update(f"{rel}{e.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())


def inventory(root: Path) -> str | None:
    """A digest of what a scan of the store at ``root`` reads, or None when an entry cannot
    be read (the full path decides what that means)."""
    h = hashlib.sha256(b"factory.review-gate-inventory/1\0")
    if any(os.path.islink(p) for p in (root, root.parent, root.parent.parent)):
        return None  # a linked store is refused by the full path, never replayed
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        names = []
    except OSError:
        return None
    for name in names:
        if not valid_lineage(name) or not (root / name).is_dir():
            continue
        if os.path.islink(root / name) or os.path.islink(root / name / "evidence"):
            return None  # a linked lineage or evidence/ is refused by the full path
        h.update(name.encode() + b"\0")
        for file in READ_FILES:
            try:
                size, digest = digest_file(root / name / file)
            except FileNotFoundError:
                h.update(b"-\0")
                continue
            except OSError:
                return None
            h.update(f"{size}:{digest}\0".encode())
    return h.hexdigest()


def memo_key(root: Path) -> str | None:
    """The key of the store at ``root`` with this code (None: an entry cannot be read)."""
    inv = inventory(root)
    if inv is None:
        return None
    h = hashlib.sha256(f"{MEMO_SCHEMA}\0{code_identity()}\0{root}\0{inv}".encode())
    return h.hexdigest()


def load(root: Path) -> tuple[str, GraphFacts] | None:
    """(key, facts) of the memo at ``root`` when its key is the store's key now, else None."""
    key = memo_key(root)
    if key is None:
        return None
    try:
        with open(root / MEMO_FILE, "rb") as f:
            doc = json.loads(f.read(64 << 20))
        if doc.get("schema") != MEMO_SCHEMA or doc.get("key") != key:
            return None
        return key, GraphFacts.from_json(doc["graph"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write(root: Path, key: str, facts: GraphFacts) -> None:
    """Record ``facts`` as the validation outcome of the store whose key is ``key`` (call
    with the store lock held, ``key`` computed under it). A failure to write is ignored:
    the memo only saves time."""
    doc: dict[str, Any] = {"schema": MEMO_SCHEMA, "key": key, "graph": facts.to_json()}
    data = json.dumps(doc, separators=(",", ":")).encode() + b"\n"
    try:
        atomic_replace(root / MEMO_FILE, data, mode=0o600)
    except OSError:
        return

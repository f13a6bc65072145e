"""Reading the mirror: refs → a store folder → the store's own validation and gates.

:func:`materialise` writes each mirror entry into a temporary folder laid out exactly as
``<git-common-dir>/factory/review/v1`` is; :func:`validate_from_refs` runs the one gate
(:func:`factory.review.gates.validate.validate`) with that folder as the store, so a
mirrored lineage is loaded, re-validated, put in its recovery graph and decided by the
same code as a local one, against the live target the gate derives from the checkout.
An entry that is not a mirror entry (:func:`~factory.review.mirror.objects.read_entry`)
is materialised as a lineage folder without its record, which the store reports as
corrupt: authority for nothing, and every gate without ``--lineage`` fails closed on it,
as on a local store. If the refs move while the gate decides, an allow becomes
``final-authorization/changed``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from factory.gitio.discover import discover
from factory.review import nextcmd
from factory.review.gates.live import GateRequest
from factory.review.gates.result import GateResult, gate_result
from factory.review.gates.verdict import deny
from factory.review.mirror.objects import NAMESPACE, list_refs, read_entry
from factory.review.names import valid_lineage
from factory.review.store import ReviewStore


def materialise(store: ReviewStore, lineage_id: str, files: Mapping[str, bytes]) -> None:
    """Write one entry's files as the lineage's folder in ``store`` (a new folder)."""
    folder = store.root / lineage_id
    folder.mkdir(mode=0o700, parents=True)
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def mirror_store(root: Path, scratch: Path, refs: Mapping[str, str]) -> tuple[ReviewStore, int]:
    """A store in ``scratch`` holding every mirror entry of ``refs``; and how many refs
    were not entries (their lineage folder has no record)."""
    store = ReviewStore(scratch)
    bad = 0
    for lid, oid in sorted(refs.items()):
        if not valid_lineage(lid):
            bad += 1
            continue
        files, why = read_entry(root, lid, oid)
        if why is not None:
            bad += 1
            files = {}
        materialise(store, lid, files)
    return store, bad


_LOCAL_ONLY = ("factory review reclaim ", "factory review repair ")


def _mirror_next(result: GateResult) -> GateResult:
    """The denial with the local store's ceremonies (reclaim, repair: they act on the
    store's folders) replaced by what makes progress with a mirror: drop the bad local
    ref, then fetch again (which validates before importing)."""
    nxt = result.context.next
    if result.denial is None or not any(n.startswith(_LOCAL_ONLY) for n in nxt):
        return result
    out: list[str] = []
    for n in nxt:
        if n.startswith(_LOCAL_ONLY) and " --lineage " in n:
            lid = n.split(" --lineage ", 1)[1].split(" ", 1)[0]
            n = f"git update-ref -d {NAMESPACE}{lid}"
        out.append(n)
    out.append("factory review fetch")
    core = result.reason.rsplit(" (next: ", 1)[0]
    verdict = deny(f"{result.denial.stage}/{result.denial.code}", core, *dict.fromkeys(out))
    return gate_result(verdict, result.context)


def validate_from_refs(cwd: Path, req: GateRequest) -> tuple[GateResult, int, int]:
    """The gate result for ``req`` with the mirror refs as the store; with the number of
    mirrored lineages read and of refs that were not mirror entries."""
    from factory.review.gates.validate import validate

    wt = discover(cwd)
    before = list_refs(wt.root)
    with tempfile.TemporaryDirectory(prefix="factory-review-mirror-") as tmp:
        store, bad = mirror_store(wt.root, Path(tmp), before)
        result = validate(cwd, req, store=store)
    result = _mirror_next(result)
    if result.allowed and list_refs(wt.root) != before:
        verdict = deny(
            "final-authorization/changed",
            "changed during final authorization: the review mirror refs moved",
            nextcmd.validate(req.gate, req.lineage) + " --from-refs",
        )
        result = gate_result(verdict, result.context)
    return result, len(before), bad

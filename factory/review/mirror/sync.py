"""``factory review push`` and ``factory review fetch``: the mirror's two directions.

**Why one ref per lineage** (and not one ref for the whole mirror with a fetch-merge-retry
loop): a lineage's entry never changes once it is terminal, so its ref is created once and
never moved. Two clones pushing different lineages touch different refs and cannot lose
each other's; two clones pushing the same lineage push the same commit (its id is a
function of the entry), which git reports as up to date. The only conflict left is two
*different* entries under one lineage id, and that is exactly what must be refused: git
refuses a non-fast-forward update of a ref to a parentless commit without ``--force``,
which no call here passes. No merge, no retry, no lost update by construction.

push: the approved leaves of the local store's recovery graph and every predecessor
their chains name (a successor whose predecessor is absent would be a dangling edge,
which fails closed everywhere), written as local refs and pushed. fetch: every remote
mirror ref into a private staging namespace, each entry checked and loaded by the store's
own code in a scratch folder; only if every new one is valid and none conflicts with a
local ref are they created locally (each by compare-and-swap against "absent"); otherwise
nothing is imported. The staging refs are removed either way.
"""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any

from factory.display import inert
from factory.gitio.config import read_config
from factory.review.errors import ReviewRecordCorrupt
from factory.review.exits import exits_for
from factory.review.gates.boundary import _current_branch, push_remote
from factory.review.graph import build_graph
from factory.review.mirror import transport
from factory.review.mirror.errors import MIRROR_CONFLICT, MIRROR_EMPTY, MIRROR_INVALID, refused
from factory.review.mirror.fromrefs import materialise
from factory.review.mirror.objects import (
    NAMESPACE,
    bound_blobs,
    create_ref,
    delete_ref,
    entry_files,
    list_refs,
    read_entry,
    write_entry,
)
from factory.review.names import valid_lineage
from factory.review.service import open_context
from factory.review.store import ReviewStore

STAGING = "refs/factory/review-fetch/"


def default_remote(cwd: Path, *, push: bool) -> str:
    """The remote git would use for the current branch: a push's (``pushRemote``,
    ``remote.pushDefault``, ``branch.<b>.remote``), a fetch's (``branch.<b>.remote``);
    else ``origin``."""
    ctx = open_context(cwd)
    cfg, branch = read_config(ctx.wt.root), _current_branch(ctx.wt)
    if push:
        return push_remote(cfg, branch)
    return (cfg.last(f"branch.{branch}.remote") if branch else None) or "origin"


def _lineages_to_mirror(store: ReviewStore) -> tuple[list[str], list[str]]:
    """(chain members of every approved leaf, approved leaves skipped for a missing
    receipt file), each sorted, leaf chains in order."""
    graph = build_graph(store.scan())
    out: list[str] = []
    skipped = []
    for leaf in graph.leaves():
        if leaf.state.state != "approved":
            continue
        if leaf.receipt != "ok":
            skipped.append(leaf.lineage_id)
            continue
        for lid in graph.chain(leaf.lineage_id):
            if lid not in out:
                out.append(lid)
    return out, skipped


def push(cwd: Path, remote: str | None) -> dict[str, Any]:
    """Mirror the store's approved authority to ``remote``; the report document.

    Raises:
        ReviewRefused: nothing to mirror, a bad remote, or a conflicting ref
            (``review-mirror-conflict``: locally or on the remote; nothing is moved).
    """
    ctx = open_context(cwd)
    root = ctx.wt.root
    name = transport.checked_remote(root, remote or default_remote(cwd, push=True), push=True)
    lineages, skipped = _lineages_to_mirror(ctx.store)
    if not lineages:
        raise refused(
            MIRROR_EMPTY,
            "no approved lineage with its receipt is in the store to mirror",
            "factory review status",
        )
    local = list_refs(root)
    rows = []
    for lid in lineages:
        oid = write_entry(root, lid, entry_files(ctx.store, ctx.store.load(lid)))
        if not _ensure_ref(root, lid, oid, local.get(lid)):
            raise refused(
                MIRROR_CONFLICT,
                f"the local mirror ref {NAMESPACE}{lid} names another entry than the store holds",
                f"git show {NAMESPACE}{lid}",
            )
        rows.append({"lineage": lid, "ref": NAMESPACE + lid, "commit": oid})
    flags = transport.push_refs(root, name, [r["ref"] for r in rows])
    rejected = [r["lineage"] for r in rows if flags.get(r["ref"]) == "!"]
    for r in rows:
        r["remote"] = {"*": "created", "=": "up-to-date"}.get(flags.get(r["ref"], ""), "rejected")
    if rejected:
        raise refused(
            MIRROR_CONFLICT,
            f"remote {inert(name)} refused {len(rejected)} mirror ref(s) without force "
            f"({', '.join(rejected[:3])}): it holds another entry under the same lineage",
            _inspect(name),
        )
    return {
        "operation": "review/push",
        "remote": name,
        "lineages": rows,
        "skipped_missing_receipt": skipped,
        "next": [  # the local store's anomalies stop every local gate: their ceremonies first
            *exits_for(ctx.store),
            f"factory review fetch --remote {name}",
        ],
    }


def fetch(cwd: Path, remote: str | None) -> dict[str, Any]:
    """Import the remote's mirror refs that validate; the report document.

    Raises:
        ReviewRefused: a bad remote, or an entry conflicting with a local ref.
        ReviewRecordCorrupt: ``review-mirror-invalid`` (nothing imported).
    """
    ctx = open_context(cwd)
    root = ctx.wt.root
    name = transport.checked_remote(root, remote or default_remote(cwd, push=False), push=False)
    staging = f"{STAGING}{secrets.token_hex(8)}/"
    try:
        transport.fetch_refs(root, name, NAMESPACE, staging)
        incoming = list_refs(root, staging)
        plan, rows = _check_incoming(root, name, incoming, list_refs(root))
        for lid, oid in plan:
            if not _ensure_ref(root, lid, oid, None):
                raise refused(
                    MIRROR_CONFLICT,
                    f"the local mirror ref {NAMESPACE}{lid} appeared meanwhile, naming "
                    "another entry",
                    f"factory review fetch --remote {name}",
                )
    finally:
        for lid in list_refs(root, staging):
            delete_ref(root, staging + lid)
    return {
        "operation": "review/fetch",
        "remote": name,
        "lineages": rows,
        "next": [*exits_for(ctx.store), "factory review validate --gate pre-pr --from-refs"],
    }


def _ensure_ref(root: Path, lineage_id: str, oid: str, current: str | None) -> bool:
    """Whether the local mirror ref of ``lineage_id`` names ``oid`` (creating it when
    absent; a concurrent creation of the same entry is fine, of another is not)."""
    if current is None and not create_ref(root, NAMESPACE + lineage_id, oid):
        current = list_refs(root).get(lineage_id)
    return current in (None, oid)


def _inspect(remote: str) -> str:
    return f"git ls-remote {remote} 'refs/factory/review/*'"


def _check_incoming(
    root: Path, remote: str, incoming: dict[str, str], local: dict[str, str]
) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
    plan, rows, invalid, conflicts = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="factory-review-fetch-") as tmp:
        scratch = ReviewStore(Path(tmp))
        for lid, oid in sorted(incoming.items()):
            if local.get(lid) == oid:
                rows.append({"lineage": lid, "commit": oid, "local": "up-to-date"})
                continue
            if lid in local:
                conflicts.append(lid)
                continue
            why = _entry_problem(root, scratch, lid, oid)
            if why is not None:
                invalid.append(f"{inert(lid, limit=80)}: {why}")
                continue
            plan.append((lid, oid))
            rows.append({"lineage": lid, "commit": oid, "local": "created"})
    if conflicts:
        raise refused(
            MIRROR_CONFLICT,
            f"{len(conflicts)} remote mirror ref(s) name another entry than the local ref of "
            f"the same lineage ({', '.join(conflicts[:3])}); nothing was imported",
            _inspect(remote),
        )
    if invalid:
        exc = MIRROR_INVALID(
            f"{len(invalid)} remote mirror entr(y/ies) do not validate ({'; '.join(invalid[:3])})"
        )
        exc.next = (_inspect(remote),)  # type: ignore[attr-defined]
        raise exc
    return plan, rows


def _entry_problem(root: Path, scratch: ReviewStore, lid: str, oid: str) -> str | None:
    """Why the entry ``oid`` cannot be imported as lineage ``lid`` (None when it can):
    not a mirror entry, or a record the store's own load refuses."""
    if not valid_lineage(lid):
        return "not a lineage id"
    files, why = read_entry(root, lid, oid)
    if why is not None:
        return why
    materialise(scratch, lid, files)
    try:
        loaded = scratch.load(lid)
        if not any(role == "policy" for role, _ in bound_blobs(scratch, loaded.state)):
            return "the policy bytes the record binds are missing"
        if entry_files(scratch, loaded) != files:
            return "the entry's files are not exactly the ones its record binds"
    except ReviewRecordCorrupt as exc:
        return exc.fact
    return None

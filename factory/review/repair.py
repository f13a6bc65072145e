"""``factory review reclaim`` and ``factory review repair``: the two ceremonies of
:mod:`factory.review.ceremony` as commands (SPEC R).

``reclaim --lineage ID --reason TEXT --actor NAME`` quarantines one folder that has no
``review-state.json`` (``incomplete-entry``), so lineage-less gates work again.
``repair --lineage ID --class CLASS --reason TEXT --actor NAME --maintainer-authorization
FILE [--also-invalid KEY …]`` quarantines one lineage of an anomaly of CLASS, when every
other anomaly of CLASS in the inventory is named with ``--also-invalid`` (none when it is
the only one), once the authorization file holds exactly the binding for (lineage, the record's raw
SHA-256, the proof digest, actor, reason); without the file — or with a wrong one — the
refusal prints the expected text. Both run under the store lock and finish a ceremony a
crash left staged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.review import nextcmd
from factory.review.authorization import binding_text, field_problem, require_authorization
from factory.review.ceremony import (
    CEREMONY_SCHEMA,
    CLASSES,
    Anomaly,
    census,
    inventory,
    pending,
    proof_of,
    record_revision,
    scan_graph,
    seal,
    stage,
)
from factory.review.errors import ReviewInputInvalid, ReviewRefused
from factory.review.exits import exit_command, exits_for, others_of, patient
from factory.review.gate_errors import CEREMONY_NOT_UNIQUE, CEREMONY_WRONG_CLASS
from factory.review.service import Context, open_context


def _check_text(name: str, value: str) -> None:
    problem = field_problem(name, value)
    if problem is not None:
        raise ReviewInputInvalid(f"--{name}: {problem}")


def _finish_pending(ctx: Context, lineage: str, operation: str) -> dict[str, Any] | None:
    folder = pending(ctx.store, lineage)
    if folder is None:
        return None
    audit = seal(folder, {})
    return _view(ctx, operation, folder, audit, resumed=True)


def _view(
    ctx: Context, operation: str, folder: Path, audit: dict[str, Any], *, resumed: bool
) -> dict[str, Any]:
    remaining = exits_for(ctx.store)  # the next anomaly's ceremony comes first
    return {
        "operation": operation,
        "lineage": audit["lineage_id"],
        "ceremony": audit["ceremony_id"],
        "anomaly_class": audit["proof"]["anomaly_class"],
        "quarantine": str(folder),
        "audit": str(folder / "audit.json"),
        "resumed": resumed,
        "next": [*remaining, "factory review status", nextcmd.validate(nextcmd.GATE_ORDER[0])],
    }


def _anomaly(ctx: Context, lineage: str, wanted: str) -> tuple[Anomaly, list[Anomaly]]:
    graph = scan_graph(ctx.store)
    found = census(ctx.store, graph)
    mine = [a for a in found if lineage in a.members]
    if not ctx.store.exists(lineage):
        raise ReviewRefused(
            f"there is no lineage folder {lineage} in the store",
            code=CEREMONY_WRONG_CLASS,
            next=("factory review status",),
        )
    if not mine or mine[0].anomaly_class != wanted:
        have = mine[0].anomaly_class if mine else "no anomaly (it validates)"
        raise ReviewRefused(
            f"lineage {lineage} is {have}, not {wanted}",
            code=CEREMONY_WRONG_CLASS,
            next=tuple(exit_command(a, found, lineage) for a in mine) or ("factory review status",),
        )
    return mine[0], found


def _named_class(anomaly: Anomaly, found: list[Anomaly], also: tuple[str, ...]) -> None:
    """A class with several anomalies is repaired one patient at a time, only when the
    command names every other one of the class (``--also-invalid``), exactly."""
    others = others_of(anomaly, found)
    if sorted(also) == sorted(others):
        return
    same = [a for a in found if a.anomaly_class == anomaly.anomaly_class]
    keys = ", ".join(a.key for a in same)
    named = ", ".join(also) or "none"
    raise ReviewRefused(
        f"{len(same)} anomalies of class {anomaly.anomaly_class} are in the inventory ({keys}) "
        f"and --also-invalid names {named}: a repair ceremony takes one case and names every "
        "other one of its class, never a class",
        code=CEREMONY_NOT_UNIQUE,
        next=tuple(exit_command(a, found, patient(a)) for a in same),
    )


def _intent(
    kind: str,
    anomaly: Anomaly,
    found: list[Anomaly],
    lineage: str,
    items: list[dict[str, Any]],
    actor: str,
    reason: str,
    authorization: bytes | None,
) -> dict[str, Any]:
    from factory.review.ceremony import _now

    proof = proof_of(anomaly, found, items)
    return {
        "schema": CEREMONY_SCHEMA,
        "ceremony_id": f"{kind}-{proof['proof_digest'].removeprefix('sha256:')[:16]}",
        "kind": kind,
        "lineage_id": lineage,
        "proof": proof,
        "inventory": items,
        "actor": actor,
        "reason": reason,
        "authorization_sha256": None if authorization is None else sha256_hex(authorization),
        "staged_at": _now(),
    }


def reclaim(cwd: Path, lineage: str, reason: str, actor: str) -> dict[str, Any]:
    """``factory review reclaim`` (see the module docstring)."""
    _check_text("reason", reason)
    _check_text("actor", actor)
    ctx = open_context(cwd)
    with ctx.store.locked("review/reclaim"):
        done = _finish_pending(ctx, lineage, "review/reclaim")
        if done is not None:
            return done
        anomaly, found = _anomaly(ctx, lineage, "incomplete-entry")
        items = inventory(ctx.store.folder(lineage))
        intent = _intent("reclaim", anomaly, found, lineage, items, actor, reason, None)
        folder = stage(ctx.store, intent)
        audit = seal(folder, {})
    return _view(ctx, "review/reclaim", folder, audit, resumed=False)


def repair(
    cwd: Path,
    lineage: str,
    anomaly_class: str,
    reason: str,
    actor: str,
    authorization: Path | None,
    also_invalid: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``factory review repair`` (see the module docstring)."""
    if anomaly_class not in CLASSES:
        raise ReviewInputInvalid(f"--class must be one of {', '.join(CLASSES)}")
    _check_text("reason", reason)
    _check_text("actor", actor)
    ctx = open_context(cwd)
    with ctx.store.locked("review/repair"):
        done = _finish_pending(ctx, lineage, "review/repair")
        if done is not None:
            return done
        anomaly, found = _anomaly(ctx, lineage, anomaly_class)
        _named_class(anomaly, found, also_invalid)
        if anomaly.key.startswith("fork:") and lineage == anomaly.members[0]:
            raise ReviewRefused(
                f"lineage {lineage} is the predecessor of the fork; quarantine one successor",
                code=CEREMONY_WRONG_CLASS,
                next=tuple(nextcmd.repair(m, anomaly_class) for m in anomaly.members[1:]),
            )
        items = inventory(ctx.store.folder(lineage))
        intent = _intent("repair", anomaly, found, lineage, items, actor, reason, None)
        expected = binding_text(
            lineage,
            record_revision(items),
            intent["proof"]["proof_digest"],
            actor,
            reason,
        )
        again = nextcmd.repair(lineage, anomaly_class, also_invalid)
        given = require_authorization(authorization, expected, "a repair ceremony", again)
        intent["authorization_sha256"] = sha256_hex(given)
        folder = stage(ctx.store, intent)
        audit = seal(folder, {"anomaly_detail": anomaly.detail})
    return _view(ctx, "review/repair", folder, audit, resumed=False)

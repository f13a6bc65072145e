"""The JSON every review command prints: lineage, state, ``next`` and what the caller needs
to act (pure functions of a stored lineage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.review import nextcmd
from factory.review.machine import admit_pending, next_commands
from factory.review.results import binding_text
from factory.review.store import Corrupt, Loaded


def lenses_view(loaded: Loaded) -> list[dict[str, Any]]:
    """Each selected lens with the exact binding text its prompt must start with."""
    s = loaded.state
    done = {r.lens: r for r in s.lens_results}
    out = []
    for lens in s.lenses:
        order, digest = s.binding(lens)
        text = binding_text(
            s.lineage_id, s.generation, s.initial_snapshot.identity, lens, order, len(s.lenses)
        )
        entry: dict[str, Any] = {
            "lens": lens,
            "order": order,
            "binding": digest,
            "binding_text": text,
        }
        result = done.get(lens)
        entry["result"] = (
            None
            if result is None
            else {
                "result_hash": result.result_hash,
                "finding_ids": [f.id for f in result.findings],
                "source": result.source.kind,
            }
        )
        out.append(entry)
    return out


def target_view(loaded: Loaded) -> dict[str, Any]:
    snap = loaded.state.initial_snapshot
    return {
        "kind": snap.kind,
        "base_tree": snap.base_tree,
        "candidate_tree": snap.candidate_tree,
        "current_candidate_tree": loaded.state.current_snapshot.candidate_tree,
        "paths_digest": snap.paths_digest,
        "identity": snap.identity,
        "intended_untracked": len(snap.intended_untracked),
    }


def summary(loaded: Loaded) -> dict[str, Any]:
    """Lineage, generation, state, revision and the legal next commands."""
    s = loaded.state
    return {
        "lineage": s.lineage_id,
        "generation": s.generation,
        "state": s.state,
        "store_revision": loaded.revision,
        "escalation": None if s.escalation is None else s.escalation.to_json_value(),
        "next": list(next_commands(s)),
    }


def start_view(loaded: Loaded, action: str, golden: int) -> dict[str, Any]:
    s = loaded.state
    return {
        "operation": "review/start",
        "action": action,
        **summary(loaded),
        "risk": s.risk.to_json_value(),
        "lenses": lenses_view(loaded),
        "target": target_view(loaded),
        "counts": {
            "changed_files": s.changed_files,
            "changed_lines": s.changed_lines,
            "golden_files": golden,
        },
        "budget": {
            "correction_budget": s.correction_budget,
            "cumulative_lines": s.correction.cumulative_lines,
        },
    }


def finalize_view(
    loaded: Loaded, applied: list[str], unused: list[str], receipt: Path | None
) -> dict[str, Any]:
    s = loaded.state
    return {
        "operation": "review/finalize",
        **summary(loaded),
        "applied": applied,
        "unused_inputs": unused,
        "pending_refuter": list(admit_pending(s))
        if s.state == "reviewing" and not s.missing_lenses()
        else [],
        "fix_finding_ids": list(s.review.fix_finding_ids) if s.review else [],
        "budget": {
            "correction_budget": s.correction_budget,
            "cumulative_lines": s.correction.cumulative_lines,
            "forecast": s.correction.forecast,
            "failed_attempts": s.correction.failed(),
        },
        "receipt_path": str(receipt) if receipt is not None else None,
    }


def status_entry(item: Loaded | Corrupt, exit: str | None = None) -> dict[str, Any]:
    """One lineage of ``status``; ``exit``: the ceremony that takes it out of the store,
    when it is part of an anomaly (named first)."""
    first = [exit] if exit is not None else []
    if isinstance(item, Corrupt):
        return {
            "lineage": item.lineage_id,
            "state": None,
            "corrupt": {"code": item.error.code, "message": item.error.message},
            "next": [*first, f"factory review show --lineage {item.lineage_id}"],
        }
    view = summary(item)
    own = view["next"]
    if item.receipt == "missing":  # every gate would deny it: finalize rewrites the receipt
        own = [nextcmd.rewrite_receipt(item.lineage_id), nextcmd.show(item.lineage_id)]
    return {**view, "next": [*first, *own], "receipt": item.receipt, "corrupt": None}

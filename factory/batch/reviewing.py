"""``factory batch run --review``: before the decision gate, the review transaction for an
approved task's candidate, with its lenses run by factory — in process, the same functions
``factory review start | lens | finalize`` call — and the tests as the final evidence.

On the subscription route each selected lens is spent once with the reviewer CLI (Codex,
read-only). On the rehearsal route each lens gets a scripted answer that finds nothing, and
says so in its evidence line: a rehearsal proves the control path, never a review.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

LENS_TIMEOUT_MS = 600_000


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """How the review transaction ended: ``approved`` lets the gate's review condition
    pass; anything else is named."""

    state: str
    lineage: str | None
    why: str | None


def scripted_lens(lens: str) -> Any:
    """The rehearsal answer for ``lens``: no finding, labelled as scripted."""
    from factory.rehearsal.scenario import parse_scenario

    answer = {
        "findings": [],
        "evidence": [f"rehearsal: a scripted answer for the {lens} lens; nothing was reviewed"],
        "lens": lens,
        "binding": None,
    }
    doc = {
        "schema": "factory.rehearsal-scenario/1",
        "description": f"factory batch --review: the {lens} lens (scripted, finds nothing).",
        "invocations": [
            {
                "role": "reviewer",
                "tool_calls": [{"tool": "shell", "command": "git diff --stat"}],
                "final_message": json.dumps(answer),
            }
        ],
    }
    return parse_scenario(json.dumps(doc).encode("utf-8"))


async def _spend(wt: Path, lens: str, rehearsal: bool, incidents: Path) -> None:
    import providers
    from factory.provider_api import SubscriptionRoute
    from factory.review.lens import preflight, run_lens
    from factory.review.service import open_context

    ctx = open_context(wt)
    profile = providers.codex_profile()
    loaded = preflight(ctx, None, lens, profile)  # type: ignore[arg-type]
    if not rehearsal:
        await run_lens(ctx, loaded, lens, profile, route=SubscriptionRoute(),  # type: ignore[arg-type]
                       timeout_ms=LENS_TIMEOUT_MS, incident_fallback=incidents)  # fmt: skip
        return
    from factory import rehearsal as scripted

    root = Path(tempfile.mkdtemp(prefix="factory-rehearsal-"))
    try:
        async with scripted.open_rehearsal(scripted_lens(lens), root / "config") as session:
            await run_lens(ctx, loaded, lens, profile, route=session.route,  # type: ignore[arg-type]
                           timeout_ms=LENS_TIMEOUT_MS, incident_fallback=incidents)  # fmt: skip
            session.check_consumed()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _unjudged(view: dict[str, Any]) -> list[str]:
    """The selected lenses with no result yet: a fresh view lists results apart
    (``lens_results``), a resumed one attaches each to its lens (``result``)."""
    judged = {str(r.get("lens")) for r in view.get("lens_results", []) or []}
    judged |= {str(e["lens"]) for e in view.get("lenses", []) if e.get("result")}
    return [str(e["lens"]) for e in view.get("lenses", []) if str(e["lens"]) not in judged]


async def review_task(
    worktree: Path, test_argv: list[str], *, rehearsal: bool, incidents: Path
) -> ReviewOutcome:
    """Start (or resume) the review of the worktree's candidate, spend every selected lens
    not yet judged, and finalize with the tests run as evidence."""
    from factory.batch.gating import bounded
    from factory.errors import FactoryError
    from factory.review.finalize import finalize
    from factory.review.finalize_inputs import FinalizeArgs
    from factory.review.service import open_context, start

    lineage = None
    try:
        view = await trio.to_thread.run_sync(
            lambda: start(worktree, base_ref=None, focus=None, policy_path=None)
        )
        lineage = view.get("lineage")
        if view.get("state") != "approved":
            if view.get("state") == "reviewing":  # a resumed lineage may be past its lenses
                for lens in _unjudged(view):
                    await _spend(worktree, lens, rehearsal, incidents)
            fargs = FinalizeArgs(evidence_run=tuple(test_argv))
            view, _ = await trio.to_thread.run_sync(lambda: finalize(open_context(worktree), fargs))
        state = str(view.get("state"))
    except FactoryError as exc:
        return ReviewOutcome("failed", lineage, bounded(f"{exc.code}: {exc.fact}"))
    why = None if state == "approved" else f"the review ended {state}"
    return ReviewOutcome(state, lineage, why)

"""Run one selected lens exactly once through the read-only reviewer profile (SPEC R).

1. :func:`preflight` — before anything is spent: the store and lineage resolve, the lineage
   is ``reviewing``, the lens is selected and has no result yet, no valid preserved answer
   for it is waiting to be replayed, the checkout still holds the frozen target (the
   binding matches), and the reviewer CLI can be found.
2. the profile runs (codex ``exec --sandbox read-only --output-schema …``) with the lens
   prompt, its binding first;
3. :func:`capture` — the raw answer goes straight into the store: strict reviewer schema,
   code-assigned ids, raw bytes bound as evidence by SHA-256, record by compare-and-swap.
   If that fails after the model answered, the payload is preserved as an incident
   artifact (:mod:`factory.review.incident`) and the command fails with
   ``review-capture-failed`` naming ``finalize --replay-preserved``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from factory.documents.canonical import sha256_hex
from factory.errors import FactoryError
from factory.provider_api import ProviderResult, RehearsalRoute, Route
from factory.review import machine
from factory.review.errors import (
    CANDIDATE_CHANGED,
    LENS_HAS_RESULT,
    LENS_NOT_SELECTED,
    LENS_PRESERVED,
    WRONG_STATE,
    ReviewCaptureFailed,
    ReviewCasConflict,
    ReviewInputInvalid,
    ReviewRecordCorrupt,
    ReviewRefused,
    ReviewStoreBusy,
)
from factory.review.incident import preserve, replayable
from factory.review.judgement import ReviewerInput, parse_input, wire_schema
from factory.review.names import LENS_ROLE_PREFIX, LensName
from factory.review.prompt import PATCH_INLINE_LIMIT, lens_prompt
from factory.review.results import LensSource, build_lens_result
from factory.review.service import Context, lineage_policy, resolve_lineage
from factory.review.snapshot import live_target, patch
from factory.review.store import Loaded
from factory.review.views import summary


class LensProfile(Protocol):
    """What the lens runner needs of the reviewer profile (codex)."""

    def resolve(self) -> Any:
        """Locate the CLI (raises ``ProviderFailure`` ``provider-not-found``)."""
        ...

    async def run_structured(
        self,
        *,
        worktree: Path,
        prompt: str,
        timeout_ms: int,
        route: Route,
        scratch: Path,
        schema: dict[str, Any],
    ) -> ProviderResult:
        """One read-only run whose raw ``-o`` bytes are ``outputs["verdict"]``."""
        ...


def _route_name(route: Route) -> Literal["subscription", "rehearsal"]:
    return "rehearsal" if isinstance(route, RehearsalRoute) else "subscription"


def _away_from_lens(nxt: Sequence[str]) -> list[str]:
    """The next commands once a lens was refused for a moved candidate: never the lens
    again (it would be refused the same way), stopping the lineage first."""
    rest = [n for n in nxt if not n.startswith("factory review lens ")]
    return sorted(rest, key=lambda n: " --failed" not in n)


def preflight(ctx: Context, lineage: str | None, lens: LensName, profile: LensProfile) -> Loaded:
    """Every check that can fail before the lens is spent (see the module docstring).

    Raises:
        ReviewRefused: wrong state, lens not selected or already judged, a preserved
            answer to replay, or the checkout no longer holds the frozen target.
        ProviderFailure: the reviewer CLI cannot be found.
    """
    loaded = resolve_lineage(ctx, lineage)
    s = loaded.state
    nxt = machine.next_commands(s)
    if s.state != "reviewing":
        raise ReviewRefused(
            f"lineage {s.lineage_id} is {s.state}: lenses run only while reviewing",
            code=WRONG_STATE,
            next=nxt,
        )
    if lens not in s.lenses:
        selected = ", ".join(s.lenses) or "none (low risk: go straight to --evidence)"
        raise ReviewRefused(
            f"lens {lens} was not selected for {s.lineage_id} (selected: {selected})",
            code=LENS_NOT_SELECTED,
            next=nxt,
        )
    if lens not in s.missing_lenses():
        raise ReviewRefused(
            f"lens {lens} already has a result in {s.lineage_id}",
            code=LENS_HAS_RESULT,
            next=nxt,
        )
    waiting = replayable(ctx.store, s, lens)
    if waiting is not None:
        cmd = f"factory review finalize --lineage {s.lineage_id} --replay-preserved {waiting}"
        raise ReviewRefused(
            f"lens {lens} already answered and its answer is preserved: {cmd}",
            code=LENS_PRESERVED,
            next=(cmd,),
        )
    init = s.initial_snapshot
    live = live_target(ctx.wt, init.kind, init.base_tree, lineage_policy(ctx, loaded))
    if live.snapshot.identity != init.identity:
        raise ReviewRefused(
            f"the checkout no longer holds the candidate lineage {s.lineage_id} froze, so a "
            "lens would judge something else",
            code=CANDIDATE_CHANGED,
            next=_away_from_lens(nxt),
        )
    profile.resolve()
    return loaded


def capture(
    ctx: Context, lineage_id: str, lens: LensName, raw: bytes, source: LensSource
) -> Loaded:
    """Record ``raw`` as ``lens``'s result (strict parse, code ids, CAS; one reload on a
    concurrent move of the lineage, e.g. another lens captured meanwhile).

    Raises:
        ReviewInputInvalid / ReviewRefused / ReviewCasConflict / ReviewStoreBusy /
        ReviewRecordCorrupt / OSError: the capture did not happen.
    """
    reviewer = parse_input(ReviewerInput, raw, what=f"the {lens} lens's answer")
    for attempt in range(2):
        loaded = ctx.store.load(lineage_id)
        s = loaded.state
        if lens not in s.lenses:
            raise LENS_NOT_SELECTED(f"lens {lens} is not selected")
        order, binding = s.binding(lens)
        result = build_lens_result(reviewer, lens=lens, order=order, binding=binding, source=source)
        new = machine.apply(s, machine.RecordLens(result))
        blobs = {LENS_ROLE_PREFIX + lens: raw}
        try:
            return ctx.store.replace(
                loaded.revision, new, command="review/lens", blobs=blobs
            ).loaded
        except ReviewCasConflict:
            if attempt:
                raise
    raise AssertionError("unreachable")


CAPTURE_ERRORS = (
    ReviewInputInvalid,
    ReviewRefused,
    ReviewCasConflict,
    ReviewStoreBusy,
    ReviewRecordCorrupt,
    OSError,
)


@dataclass(frozen=True, slots=True)
class LensRun:
    """A captured lens: the stored lineage and what ran."""

    loaded: Loaded
    lens: LensName
    result: ProviderResult
    route: Literal["subscription", "rehearsal"]


async def run_lens(
    ctx: Context,
    loaded: Loaded,
    lens: LensName,
    profile: LensProfile,
    *,
    route: Route,
    timeout_ms: int,
    incident_fallback: Path,
) -> LensRun:
    """Spend the lens once and capture its answer (call :func:`preflight` first).

    Raises:
        ProviderFailure: the CLI ran without a usable answer (nothing to preserve).
        ReviewCaptureFailed: it answered, but the answer could not be captured; preserved.
    """
    s = loaded.state
    init = s.initial_snapshot
    prompt = lens_prompt(
        s, lens, patch(ctx.wt, init.base_tree, init.candidate_tree, PATCH_INLINE_LIMIT)
    )
    with tempfile.TemporaryDirectory(prefix="factory-lens-") as scratch:
        result = await profile.run_structured(
            worktree=ctx.wt.root,
            prompt=prompt,
            timeout_ms=timeout_ms,
            route=route,
            scratch=Path(scratch),
            schema=wire_schema("reviewer"),
        )
    raw = result.outputs.get("verdict", b"")
    name = _route_name(route)
    source = LensSource(
        kind="lens-run",
        raw_sha256=sha256_hex(raw),
        raw_bytes=len(raw),
        route=name,
        cli_version=result.cli_version,
    )
    try:
        stored = capture(ctx, s.lineage_id, lens, raw, source)
    except CAPTURE_ERRORS as exc:
        code = exc.code if isinstance(exc, FactoryError) else "store-unwritable"
        reason = exc.fact if isinstance(exc, FactoryError) else str(exc)
        path = preserve(
            ctx.store,
            s,
            lens,
            raw,
            reason_code=code,
            reason=reason,
            route=name,
            cli_version=result.cli_version or "unknown",
            fallback=incident_fallback,
        )
        invalid = isinstance(exc, ReviewInputInvalid)
        raise _capture_failed(s.lineage_id, lens, code, reason, path, invalid=invalid) from None
    return LensRun(stored, lens, result, name)


def _capture_failed(
    lineage_id: str, lens: str, code: str, reason: str, path: Path, *, invalid: bool
) -> ReviewCaptureFailed:
    if invalid:
        hint = "the answer is not a valid reviewer result, so the lens may run again"
        command = f"factory review lens --lineage {lineage_id} --lens {lens}"
    else:
        hint = "replay it"
        command = f"factory review finalize --lineage {lineage_id} --replay-preserved {path}"
    return ReviewCaptureFailed(
        f"lens {lens} answered but its result was not captured ({code}: {reason[:200]}); "
        f"the raw answer is preserved at {path}; {hint}",
        preserved=str(path),
        next=(command,),
    )


def lens_view(run: LensRun) -> dict[str, Any]:
    """The JSON ``factory review lens`` prints."""
    result = next(r for r in run.loaded.state.lens_results if r.lens == run.lens)
    return {
        "operation": "review/lens",
        **summary(run.loaded),
        "lens": run.lens,
        "route": run.route,
        "cli_version": run.result.cli_version,
        "result_hash": result.result_hash,
        "finding_ids": [f.id for f in result.findings],
        "missing_lenses": list(run.loaded.state.missing_lenses()),
    }

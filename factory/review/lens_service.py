"""One lens run as a function: ``factory review lens`` and the pipeline demo call this
(issue 25: no subsystem runs factory's CLI to review).

The route is the subscription route, or — with a rehearsal scenario — the scripted
loopback model in a temporary configuration folder that is removed afterwards; every
invocation the scenario scripts must have been consumed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from factory.provider_api import Route
    from factory.rehearsal import RehearsalSession
    from factory.rehearsal.scenario import Scenario
    from factory.review.lens import LensProfile
    from factory.review.names import LensName


@asynccontextmanager
async def lens_route(
    scenario: Scenario | None,
) -> AsyncIterator[tuple[Route, RehearsalSession | None]]:
    """The route a lens spends: subscription, or the rehearsal of ``scenario``."""
    from factory.provider_api import SubscriptionRoute

    if scenario is None:
        yield SubscriptionRoute(), None
        return
    from factory import rehearsal

    root = Path(tempfile.mkdtemp(prefix="factory-rehearsal-"))
    try:
        async with rehearsal.open_rehearsal(scenario, root / "config") as session:
            yield session.route, session
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_one_lens(
    cwd: Path,
    lens: LensName,
    profile: LensProfile,
    *,
    lineage: str | None,
    timeout_ms: int,
    scenario: Scenario | None,
    incident_fallback: Path,
    admitted: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Preflight, spend and capture one lens of the lineage in ``cwd``'s repository; the
    ``factory review lens`` view. ``admitted`` is called once every refusal is behind,
    before anything is spent (the CLI says REHEARSAL there, never above a refusal).
    Raises the typed refusals of :func:`factory.review.lens.preflight` and
    :func:`factory.review.lens.run_lens`."""
    import trio

    from factory.review.lens import lens_view, preflight, run_lens
    from factory.review.service import open_context

    ctx = open_context(cwd)
    loaded = preflight(ctx, lineage, lens, profile)
    if admitted is not None:
        admitted()

    async def main() -> Any:
        async with lens_route(scenario) as (route, session):
            ran = await run_lens(
                ctx, loaded, lens, profile, route=route, timeout_ms=timeout_ms,
                incident_fallback=incident_fallback,
            )  # fmt: skip
            if session is not None:
                session.check_consumed()
            return ran

    return lens_view(trio.run(main))

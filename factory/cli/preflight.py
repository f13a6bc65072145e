"""Provider preflight: nothing is created before a run can start (issue 22).

``factory agent`` (and the demo and ``operator run``, which run the same call) asks both
profiles, before it reserves a receipt or creates a worktree or a branch, whether they
could start on the run's route: the executable is found, ``--version`` answers, and on the
subscription route the CLI's own login is present. A profile that cannot is a refusal,
exit 2, with nothing written — where before, each login-less try of ``--repo`` left a
worktree, a branch and a failed receipt behind.

A profile object that does not implement :class:`~factory.provider_api.Preflight` (a
test's in-process fake) is not asked.
"""

from __future__ import annotations

import trio

from factory.errors import ProviderFailure, Refused
from factory.provider_api import Preflight, RouteName


class ProviderNotReady(Refused):
    """A provider could not start on the run's route; nothing was created (exit 2)."""


PROVIDER_NOT_READY = ProviderNotReady.define(
    "provider-not-ready",
    "run factory doctor: it shows each CLI's path, version and login (claude: /login; "
    "codex: codex login); nothing was created",
)


PROVIDER_MISSING = ProviderNotReady.define(
    "provider-missing",
    "install the pinned CLIs with factory providers install (npm, about 700 MB, with "
    "progress), or put your own claude and codex first on PATH; factory doctor shows what "
    "it finds; nothing was created",
)


async def _check(profiles: tuple[object, ...], route: RouteName) -> None:
    for profile in profiles:
        if not isinstance(profile, Preflight):
            continue
        try:
            await profile.preflight(route)
        except ProviderFailure as exc:
            name = getattr(profile, "name", "a provider")
            # Not found (or not runnable without a shell): the resolver's words name every
            # folder it searched, and the next step is how to install them (issue 28).
            code = PROVIDER_MISSING if exc.code == "provider-not-found" else PROVIDER_NOT_READY
            raise code(
                f"{name} cannot start on the {route} route ({exc.code}: {exc.fact})"
            ) from None


def preflight(*profiles: object, route: RouteName) -> None:
    """Refuse (exit 2) when one of ``profiles`` could not start on ``route``.

    Raises:
        ProviderNotReady: ``provider-missing`` (the CLI was not found: where it was looked
            for, and how to install it) or ``provider-not-ready``, naming the profile and
            its P-4 code.
    """
    trio.run(_check, profiles, route)

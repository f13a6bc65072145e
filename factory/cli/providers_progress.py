"""``factory providers install`` with progress (issue 28): npm is quiet for minutes while
it downloads about 700 MB, so a person sees one line per step on stderr, a line every
``interval_s`` while npm runs (time so far and how much is in the folder), and a closing
summary naming what was installed, where, and how long it took.

The steps and the check of what npm left are here; npm itself runs in
:func:`providers.install.install` (a supervised child, never a shell).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import trio

from factory.display import inert
from providers.install import INSTALL_FAILED, install, pins

Say = Callable[[str], None]
PREFIX = "factory providers: "


def folder_mb(home: Path) -> int:
    """Megabytes of the files under ``home`` (0 while it is empty or unreadable)."""
    total = 0
    for root, _, names in os.walk(home):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total // 1_000_000


async def _heartbeat(home: Path, say: Say, interval_s: float, started: float) -> None:
    while True:
        await trio.sleep(interval_s)
        mb = await trio.to_thread.run_sync(folder_mb, home, abandon_on_cancel=True)
        took = int(time.monotonic() - started)
        say(inert(f"{PREFIX}npm is still installing: {took} s, {mb} MB in {home} so far"))


def installed(home: Path) -> list[str]:
    """``name version`` of each pinned CLI npm left in ``home``.

    Raises:
        InstallFailed: npm exited 0 but a CLI is not in ``home/node_modules/.bin``.
    """
    found = []
    for name, pin in sorted(pins().items()):
        if not (home / "node_modules" / ".bin" / name).exists():
            raise INSTALL_FAILED(f"npm finished, but {name} is not in {home / 'node_modules/.bin'}")
        manifest = home / "node_modules" / pin["package"] / "package.json"
        try:
            version = str(json.loads(manifest.read_bytes()).get("version"))
        except (OSError, ValueError):
            version = "(version not recorded by npm)"
        found.append(f"{name} {version}")
    return found


async def install_with_progress(
    home: Path, environ: Mapping[str, str], say: Say, *, interval_s: float = 10.0
) -> list[str]:
    """Install the pinned CLIs into ``home``, saying each step; return what was installed."""
    wanted = ", ".join(f"{p['package']}@{p['version']}" for p in pins().values())
    started = time.monotonic()
    say(inert(f"{PREFIX}[1/2] installing {wanted} into {home} with npm (about 700 MB)"))
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_heartbeat, home, say, interval_s, started)
            await install(home, environ)
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # npm's typed refusal or failure, unwrapped
        from factory.agent.faults import typed_error

        typed = typed_error(group)
        if typed is None:
            raise
        raise typed from None
    say(f"{PREFIX}[2/2] npm finished; checking what it installed")
    found = installed(home)
    took = int(time.monotonic() - started)
    bins = home / "node_modules" / ".bin"
    say(inert(f"{PREFIX}installed {' and '.join(found)} into {bins} in {took} s"))
    return found

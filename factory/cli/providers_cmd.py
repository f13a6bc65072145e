"""``factory providers install``: the pinned provider CLIs for an installed factory.

A checkout gets them from ``./scripts/setup`` (``npm ci``). An isolated tool install uses
the user's own ``claude`` and ``codex`` on PATH, or these, installed with npm on request
into ``$FACTORY_PROVIDERS_HOME`` (default ``~/.local/share/factory/providers``), where the
profiles find them after PATH and the checkout (``providers.install``).
"""

from __future__ import annotations

import argparse
from typing import Any

from factory.cli.framework import say

HELP = """\
Install the provider CLIs at the versions factory's profiles are verified for
(@anthropic-ai/claude-code and @openai/codex, pinned in the package) with your npm, into
--dir (default $FACTORY_PROVIDERS_HOME, else $XDG_DATA_HOME/factory/providers, else
~/.local/share/factory/providers; about 700 MB). factory finds CLIs on PATH first, then a
checkout's node_modules, then this folder; 'factory doctor' says which one it uses.
Logins are not touched: log in with the CLIs themselves (doctor prints the command).
"""


def register(sub: Any) -> None:
    p = sub.add_parser("providers", help="install the pinned provider CLIs (npm)")
    psub = p.add_subparsers(title="providers commands", metavar="COMMAND", parser_class=type(p))
    install = psub.add_parser(
        "install",
        help="install the pinned claude and codex CLIs with npm",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument("--dir", metavar="D", help="install folder (see above)")
    install.set_defaults(handler=run_install)


def run_install(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    import trio

    from factory.cli.providers_progress import install_with_progress
    from factory.display import inert
    from factory.usercmd import factory_command
    from providers.install import providers_home

    home = Path(os.path.abspath(args.dir)) if args.dir else providers_home()
    trio.run(install_with_progress, home, dict(os.environ), say)
    hint = factory_command("doctor")
    if args.dir:
        say(inert(f"factory providers: set FACTORY_PROVIDERS_HOME={home} so factory finds them"))
    say(inert(f"factory providers: next: {hint}"))
    return 0

"""The pinned provider CLIs for an installed factory (issue 9 §6): where they live and how
``factory providers install`` puts them there.

A checkout has the pinned CLIs in ``node_modules`` (``npm ci``, ``scripts/setup``). An
isolated tool install (``uv tool install`` / ``pipx install``) has no checkout: it uses the
user's own CLIs on ``PATH``, or, on request, the pinned versions installed with npm into
:func:`providers_home` — ``$FACTORY_PROVIDERS_HOME``, else
``$XDG_DATA_HOME/factory/providers`` (default ``~/.local/share/factory/providers``) —
whose ``node_modules/.bin`` the resolver searches after ``PATH`` and the checkout
(:mod:`providers.resolve`).

The pins ship inside the package (``pins.json``; a test keeps them equal to the
checkout's ``package.json``), so an installed factory knows the versions its profiles'
flags were verified against. npm runs as a supervised child (``factory.proc``) with an
argv, never a shell, and an environment of the user's npm settings only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Final

from factory.errors import Failure, Refused
from factory.proc import ProcessFailure, RunResult, RunSpec, run

INSTALL_TIMEOUT_S: Final = 1800.0
#: Caller variables npm may need: where it is, the user's npm configuration, proxies, CAs.
NPM_ENV: Final = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "USER",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
)


class InstallFailed(Failure):
    """npm could not install the pinned CLIs (exit 4)."""


class NpmMissing(Refused):
    """npm is not on PATH (exit 2)."""


INSTALL_FAILED = InstallFailed.define(
    "providers-install-failed", "read npm's message above, fix it and run the install again"
)
NPM_MISSING = NpmMissing.define(
    "npm-not-found", "install Node.js and npm (https://nodejs.org), or put your own CLIs on PATH"
)


def pins() -> dict[str, dict[str, str]]:
    """``{"claude"|"codex": {"package", "version"}}`` as shipped in the package."""
    data = files("providers").joinpath("pins.json").read_text(encoding="utf-8")
    value: dict[str, dict[str, str]] = json.loads(data)
    return value


def pinned_versions() -> dict[str, str | None]:
    """Profile name → the pinned version (SPEC P-6)."""
    return {name: pin.get("version") for name, pin in pins().items()}


def providers_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``factory providers install`` puts the pinned CLIs (see the module doc)."""
    env = os.environ if environ is None else environ
    explicit = env.get("FACTORY_PROVIDERS_HOME")
    if explicit:
        return Path(explicit)
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local/share")
    return Path(data) / "factory" / "providers"


def bin_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder the resolver searches for CLIs installed by ``factory providers install``."""
    return providers_home(environ) / "node_modules" / ".bin"


def npm_env(environ: Mapping[str, str]) -> dict[str, str]:
    """npm's child environment: :data:`NPM_ENV` and the user's ``npm_config_*`` only."""
    keep = {k: v for k, v in environ.items() if k in NPM_ENV}
    keep.update({k: v for k, v in environ.items() if k.lower().startswith("npm_config_")})
    return keep


def install_argv(npm: str, home: Path) -> list[str]:
    """``npm install`` of exactly the pinned versions into ``home``."""
    wanted = [f"{pin['package']}@{pin['version']}" for pin in pins().values()]
    return [
        npm,
        "install",
        "--prefix",
        os.fspath(home),
        "--save-exact",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        *wanted,
    ]


async def install(home: Path, environ: Mapping[str, str]) -> RunResult:
    """Install the pinned CLIs into ``home`` with the user's npm.

    Raises:
        NpmMissing: no ``npm`` on ``PATH`` (exit 2).
        InstallFailed: npm failed or timed out (exit 4).
    """
    import shutil

    env = npm_env(environ)
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise NPM_MISSING("npm is not on PATH")
    home.mkdir(parents=True, exist_ok=True)
    spec = RunSpec(argv=install_argv(npm, home), env=env, cwd=home, timeout_s=INSTALL_TIMEOUT_S)
    try:
        result = await run(spec)
    except ProcessFailure as exc:
        raise INSTALL_FAILED(f"npm install did not finish ({exc.code})") from exc
    if result.exit_code != 0:
        tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        from factory.display import inert_join

        raise INSTALL_FAILED(
            f"npm install exited {result.exit_code}: {inert_join(tail, ' | ') or 'no message'}"
        )
    return result

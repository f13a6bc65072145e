"""``factory doctor`` probes: what is installed, which version, who is logged in, and
whether Codex's read-only sandbox works on this machine (issue 4, SPEC P-2, P-6).

Per profile: ``binary`` (``path``, ``found``, ``via``, ``unwrapped``) or null,
``version``, ``pinned``, ``matches_pin``, ``roles``, ``login`` (``present``, ``method``,
``detail``) or null, ``ignored_env`` (names of set caller variables the factory never
passes, SPEC P-3), ``problems`` (one line each); codex also ``sandbox``
(``read_only_works``, ``detail``). ``routes``: ``rehearsal``, ``subscription`` (booleans).

Every probe runs through the supervised runner with a deadline; nothing here writes
outside a temporary folder it removes again. The result is a JSON value
(``factory.doctor/1``) that the CLI prints; readiness is data, not an exit code.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factory.errors import ProviderFailure
from factory.proc import ProcessFailure, RunSpec
from factory.provider_api import SubscriptionRoute
from factory.usercmd import shown_program
from providers import claude as claude_mod
from providers import codex as codex_mod
from providers.claude import ClaudeProfile
from providers.codex import CodexProfile
from providers.common import Effects, caller_base, probe_version
from providers.resolve import Resolved

SCHEMA = "factory.doctor/1"
PROBE_TIMEOUT_S = 20.0
# Caller variables a user may expect a CLI to honour but that the factory never passes
# (SPEC P-3); doctor names the ones that are set so "not logged in" is not a mystery.
_PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
IGNORED_ENV: dict[str, tuple[str, ...]] = {
    "claude": (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CONFIG_DIR",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "CLAUDE_CODE_USE_FOUNDRY",
        *_PROXIES,
    ),
    "codex": ("CODEX_HOME", "CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", *_PROXIES),
}


def ignored_env(name: str, environ: Mapping[str, str]) -> list[str]:
    """Names (never values) from :data:`IGNORED_ENV` that are set in ``environ``."""
    return [var for var in IGNORED_ENV[name] if environ.get(var)]


def pinned_versions() -> dict[str, str | None]:
    """The versions the package pins for the CLIs (SPEC P-6; ``providers/pins.json``, kept
    equal to the checkout's ``package.json`` by a test), so an installed factory knows
    them too."""
    from providers.install import pinned_versions as shipped

    return shipped()


def _binary(resolved: Resolved) -> dict[str, Any]:
    return {
        "path": str(resolved.path),
        "found": str(resolved.found),
        "via": resolved.via,
        "unwrapped": resolved.unwrapped or None,
    }


async def _common(
    profile: ClaudeProfile | CodexProfile, effects: Effects, pinned: str | None
) -> tuple[dict[str, Any], Resolved | None, dict[str, str]]:
    entry: dict[str, Any] = {
        "binary": None,
        "version": None,
        "pinned": pinned,
        "matches_pin": None,
        "problems": [],
        "ignored_env": ignored_env(profile.name, effects.env()),
    }
    env = caller_base(effects.env())
    try:
        resolved = profile.resolve()
    except ProviderFailure as exc:
        entry["problems"].append(f"{exc.code}: {exc.message}")
        return entry, None, env
    entry["binary"] = _binary(resolved)
    try:
        version = await probe_version(resolved.path, env, effects.runner)
    except ProviderFailure as exc:
        entry["problems"].append(f"{exc.code}: {exc.message}")
        return entry, None, env
    entry["version"] = version
    if pinned:
        entry["matches_pin"] = pinned in version.split()
        if not entry["matches_pin"]:
            entry["problems"].append(
                f"version {version!r} is not the pinned {pinned}: the profile's flags are "
                f"verified for {pinned}; put that version first on PATH or remove this one"
            )
    return entry, resolved, env


def _login_problem(text: str, entry: dict[str, Any]) -> str:
    if entry["ignored_env"]:
        text += (
            f" (set but never passed to the CLI: {', '.join(entry['ignored_env'])}; "
            "only the login store under HOME counts)"
        )
    return text


async def check_claude(effects: Effects, pinned: str | None) -> dict[str, Any]:
    """Binary, version and subscription login of the ``claude`` profile."""
    profile = ClaudeProfile(effects)
    entry, resolved, _ = await _common(profile, effects, pinned)
    entry["roles"] = list(claude_mod.ROLES)
    entry["login"] = None
    if resolved is not None:
        env = claude_mod.build_env(SubscriptionRoute(), effects.env())
        status = await profile.auth_status(resolved, env)
        present = status.get("loggedIn") is True
        entry["login"] = {
            "present": present,
            "method": status.get("authMethod"),
            "detail": "claude auth status" if status else "no JSON from 'claude auth status'",
        }
        if not present:
            claude = shown_program(resolved.found)
            entry["problems"].append(
                _login_problem(f"no subscription login: run {claude} and type /login", entry)
            )
    return entry


async def sandbox_probe(resolved: Resolved, effects: Effects) -> dict[str, Any]:
    """Does ``codex sandbox`` in read-only mode run a command *and* refuse a write?

    Positive control: ``cat`` of a nonce file must print the nonce (a sandbox that
    silently runs nothing, openai/codex#46246, fails here). Negative: ``touch`` of a new
    file must fail and leave no file.
    """
    base = caller_base(effects.env())
    cat, touch = (
        shutil.which("cat", path=base.get("PATH")),
        shutil.which("touch", path=base.get("PATH")),
    )
    if not cat or not touch:
        return {"read_only_works": None, "detail": "cat/touch not on PATH; probe skipped"}
    with tempfile.TemporaryDirectory(prefix="factory-doctor-") as tmp:
        folder = Path(tmp)
        (folder / "codex-home").mkdir()
        nonce = secrets.token_hex(8)
        (folder / "nonce").write_text(nonce)
        env = {**base, "CODEX_HOME": str(folder / "codex-home")}
        prefix = [str(resolved.path), "sandbox", "-c", 'sandbox_mode="read-only"', "--"]
        try:
            read = await effects.runner(
                RunSpec(
                    argv=[*prefix, cat, str(folder / "nonce")],
                    env=env,
                    cwd=folder,
                    timeout_s=PROBE_TIMEOUT_S,
                    grace_s=1.0,
                )
            )
            write = await effects.runner(
                RunSpec(
                    argv=[*prefix, touch, str(folder / "written")],
                    env=env,
                    cwd=folder,
                    timeout_s=PROBE_TIMEOUT_S,
                    grace_s=1.0,
                )
            )
        except ProcessFailure as exc:
            return {"read_only_works": False, "detail": f"sandbox probe failed ({exc.code})"}
        ran = read.exit_code == 0 and nonce.encode() in read.stdout
        refused = write.exit_code != 0 and not (folder / "written").exists()
        if ran and refused:
            detail = "read allowed, write refused"
        elif not ran:
            detail = "a sandboxed command did not run: " + _last_line(read.stderr)
        else:
            detail = "a write inside the read-only sandbox succeeded"
        return {"read_only_works": ran and refused, "detail": detail}


def _last_line(data: bytes) -> str:
    lines = [
        ln
        for ln in data.decode("utf-8", "replace").splitlines()
        if ln.strip() and not ln.startswith("WARNING")
    ]
    return lines[-1][:200] if lines else "no output"


async def check_codex(effects: Effects, pinned: str | None) -> dict[str, Any]:
    """Binary, version, login and read-only sandbox of the ``codex`` profile."""
    profile = CodexProfile(effects)
    entry, resolved, _ = await _common(profile, effects, pinned)
    entry["roles"] = ["reviewer"]
    entry["login"] = None
    entry["sandbox"] = None
    if resolved is not None:
        env = codex_mod.build_env(SubscriptionRoute(), effects.env())
        present, message = await profile.login_status(resolved, env)
        entry["login"] = {"present": present, "method": None, "detail": message}
        if not present:
            codex = shown_program(resolved.found)
            entry["problems"].append(_login_problem(f"no login: run {codex} login", entry))
        entry["sandbox"] = await sandbox_probe(resolved, effects)
        if entry["sandbox"]["read_only_works"] is not True:
            entry["problems"].append("read-only sandbox: " + entry["sandbox"]["detail"])
    return entry


async def diagnose(effects: Effects | None = None) -> dict[str, Any]:
    """The full ``factory.doctor/1`` report.

    ``routes.rehearsal`` is ready when both binaries run and the sandbox works;
    ``routes.subscription`` additionally needs both logins.
    """
    fx = effects or Effects()
    pins = pinned_versions()
    claude = await check_claude(fx, pins["claude"])
    codex = await check_codex(fx, pins["codex"])
    runs = claude["version"] is not None and codex["version"] is not None
    sandbox = bool(codex["sandbox"] and codex["sandbox"]["read_only_works"])
    logins = bool(
        claude["login"]
        and claude["login"]["present"]
        and codex["login"]
        and codex["login"]["present"]
    )
    return {
        "schema": SCHEMA,
        "profiles": {"claude": claude, "codex": codex},
        "routes": {"rehearsal": runs and sandbox, "subscription": runs and sandbox and logins},
    }

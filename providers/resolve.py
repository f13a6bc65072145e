"""Find a provider CLI and unwrap npm launchers to the native binary (SPEC P-2).

Resolution order (first hit wins):

1. each folder of the caller's ``PATH``, in order (SPEC P-2: "resolves from PATH");
2. the checkout's pinned CLIs, ``<checkout>/node_modules/.bin`` (``package.json`` pins
   the versions the tests and the rehearsal route use);
3. the pinned CLIs ``factory providers install`` put in
   :func:`providers.install.bin_dir` (an installed factory has no checkout).

A hit is then unwrapped: symlinks are resolved; a native ELF is used as is; a known npm
launcher (Claude's ``claude.exe`` stub before postinstall, Codex's ``bin/codex.js`` Node
shim) is replaced by the platform package's native binary. Anything that would need a
shell or Node to run — a ``#!/bin/sh`` wrapper, an unknown ``.js`` shim — is refused with
``provider-not-found``: running it would put an interpreter we cannot supervise between
us and the CLI (the Codex shim spawns a child and orphans it on SIGKILL). Other ``#!``
programs (e.g. a Python script) are executed by the kernel without a shell and accepted.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from factory.provider_api import PROVIDER_NOT_FOUND

CHECKOUT = Path(__file__).resolve().parents[1]
_SHELLS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "mksh",
        "ash",
        "fish",
        "csh",
        "tcsh",
        "node",
        "nodejs",
        "bun",
        "deno",
    }
)


Via = Literal["PATH", "checkout", "factory-providers"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A runnable provider binary.

    Attributes:
        path: absolute path of the file that will be executed.
        found: the name as first found (PATH entry or ``node_modules/.bin`` link).
        via: ``"PATH"``, ``"checkout"`` or ``"factory-providers"``.
        unwrapped: what was unwrapped, e.g. ``"npm codex.js shim"``, or ``""``.
    """

    path: Path
    found: Path
    via: Via
    unwrapped: str


def _arch() -> tuple[str, str]:
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return "arm64", "aarch64"
    return "x64", "x86_64"


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _interpreter(path: Path) -> str | None:
    """The program named by a ``#!`` line (``env`` skipped), or None when there is none."""
    try:
        with path.open("rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return "sh"
    prog = Path(words[0]).name
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        prog = Path(rest[0]).name if rest else "env"
    return prog


def _native_candidates(name: str, real: Path) -> list[Path]:
    """Platform binaries an npm launcher at ``real`` stands for."""
    arch, triple = _arch()
    out: list[Path] = []
    for parent in real.parents:
        if parent.name != "node_modules":
            continue
        if name == "claude":
            out.append(parent / "@anthropic-ai" / f"claude-code-linux-{arch}" / "claude")
            out.append(
                parent
                / "@anthropic-ai"
                / "claude-code"
                / "node_modules"
                / "@anthropic-ai"
                / f"claude-code-linux-{arch}"
                / "claude"
            )
        else:
            vendor = Path("vendor") / f"{triple}-unknown-linux-musl" / "bin" / "codex"
            out.append(parent / "@openai" / f"codex-linux-{arch}" / vendor)
            out.append(
                parent
                / "@openai"
                / "codex"
                / "node_modules"
                / "@openai"
                / f"codex-linux-{arch}"
                / vendor
            )
            out.append(parent / "@openai" / "codex" / vendor)
        break
    return out


def _is_npm_launcher(name: str, real: Path) -> bool:
    parts = real.parts
    if name == "claude":
        return parts[-3:] == ("claude-code", "bin", "claude.exe") or real.name == "cli.js"
    return parts[-3:] == ("codex", "bin", "codex.js")


def unwrap(name: str, found: Path) -> tuple[Path, str]:
    """The native executable behind ``found`` and a note on what was unwrapped.

    Raises:
        ProviderFailure: ``provider-not-found`` when only a shell/Node launcher exists.
    """
    real = found.resolve()
    if _is_elf(real):
        return real, ("" if real == found else "symlink")
    if _is_npm_launcher(name, real):
        for candidate in _native_candidates(name, real):
            if candidate.is_file() and _is_elf(candidate) and os.access(candidate, os.X_OK):
                return candidate, f"npm launcher {real.name}"
        raise PROVIDER_NOT_FOUND(
            f"{name}: {found} is an npm launcher whose native platform binary is missing "
            "(reinstall it with npm, optional dependencies enabled)"
        )
    interp = _interpreter(real)
    if interp is None or interp in _SHELLS:
        what = f"a {interp} script" if interp else "neither a native binary nor a #! program"
        raise PROVIDER_NOT_FOUND(
            f"{name}: {found} is {what}; factory runs provider CLIs without a shell, so the "
            "native binary must come first on PATH"
        )
    return real, f"#! {interp} program"


def default_fallbacks(environ: Mapping[str, str] | None = None) -> list[tuple[Path, Via]]:
    """The pinned CLIs' folders after ``PATH``: the checkout's, then the installed ones."""
    from providers.install import bin_dir

    return [
        (CHECKOUT / "node_modules" / ".bin", "checkout"),
        (bin_dir(environ), "factory-providers"),
    ]


def resolve(
    name: Literal["claude", "codex"],
    *,
    path_env: str | None,
    fallback_dirs: Sequence[Path] | None = None,
    checkout_first: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Resolved:
    """Resolve ``name`` (see module doc for the order and the unwrapping rules).

    ``fallback_dirs`` replaces the pinned folders (tests; found ``via`` ``"checkout"``).
    ``checkout_first`` searches the pinned folders before ``PATH``: for contract tests
    that must run the pinned CLIs whatever else is installed (SPEC P-6). ``environ``
    locates the installed CLIs' folder (default: this process's environment).

    Raises:
        ProviderFailure: ``provider-not-found`` when no runnable binary exists.
    """
    on_path: list[tuple[Path, Via]] = [
        (Path(entry) / name, "PATH")
        for entry in (path_env or "").split(os.pathsep)
        if entry and os.path.isabs(entry)
    ]
    folders = (
        default_fallbacks(environ)
        if fallback_dirs is None
        else [(Path(d), "checkout") for d in fallback_dirs]
    )
    pinned: list[tuple[Path, Via]] = [(folder / name, via) for folder, via in folders]
    candidates = pinned + on_path if checkout_first else on_path + pinned
    for path, via in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            native, note = unwrap(name, path)
            return Resolved(path=native, found=path, via=via, unwrapped=note)
    # Every folder searched, by its real path; PATH's last, as a cap would cut it first.
    where = "".join(f"in {folder}, " for folder, _ in folders)
    searched = ", ".join(str(path.parent) for path, _ in on_path) or "empty"
    raise PROVIDER_NOT_FOUND(
        f"{name} was not found {where + 'or ' if where else ''}on PATH ({searched})"
    )

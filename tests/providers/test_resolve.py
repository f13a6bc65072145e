"""Executable resolution and npm-launcher unwrapping (SPEC P-2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from factory.errors import ProviderFailure
from providers.resolve import CHECKOUT, resolve

ELF = Path("/bin/true").resolve()


def _exe(path: Path, content: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        shutil.copyfile(ELF, path)
    else:
        path.write_bytes(content)
    path.chmod(0o755)
    return path


def test_native_binary_on_path_is_used_as_is(tmp_path: Path) -> None:
    exe = _exe(tmp_path / "bin" / "claude")
    got = resolve("claude", path_env=f"{tmp_path / 'bin'}:/usr/bin", fallback_dirs=())
    assert got.path == exe and got.via == "PATH" and got.unwrapped == ""


def test_path_order_wins(tmp_path: Path) -> None:
    first = _exe(tmp_path / "a" / "codex")
    _exe(tmp_path / "b" / "codex")
    got = resolve("codex", path_env=f"{tmp_path / 'a'}:{tmp_path / 'b'}", fallback_dirs=())
    assert got.path == first


def test_missing_everywhere_is_provider_not_found(tmp_path: Path) -> None:
    with pytest.raises(ProviderFailure) as info:
        resolve("claude", path_env=str(tmp_path), fallback_dirs=(tmp_path / "none",))
    assert info.value.code == "provider-not-found"


def test_checkout_node_modules_is_the_fallback(tmp_path: Path) -> None:
    exe = _exe(tmp_path / "nm" / ".bin" / "claude")
    got = resolve("claude", path_env=str(tmp_path / "empty"), fallback_dirs=(exe.parent,))
    assert got.via == "checkout" and got.path == exe


def test_shell_wrapper_is_refused(tmp_path: Path) -> None:
    _exe(tmp_path / "bin" / "claude", b'#!/bin/sh\nexec real-claude "$@"\n')
    with pytest.raises(ProviderFailure) as info:
        resolve("claude", path_env=str(tmp_path / "bin"), fallback_dirs=())
    assert info.value.code == "provider-not-found" and "shell" in info.value.message


def test_unknown_node_script_is_refused(tmp_path: Path) -> None:
    _exe(tmp_path / "bin" / "codex", b"#!/usr/bin/env node\nrequire('x')\n")
    with pytest.raises(ProviderFailure) as info:
        resolve("codex", path_env=str(tmp_path / "bin"), fallback_dirs=())
    assert info.value.code == "provider-not-found"


def test_codex_npm_shim_is_unwrapped_to_the_musl_binary(tmp_path: Path) -> None:
    nm = tmp_path / "node_modules"
    shim = _exe(nm / "@openai" / "codex" / "bin" / "codex.js", b"#!/usr/bin/env node\n")
    native = _exe(
        nm
        / "@openai"
        / "codex-linux-x64"
        / "vendor"
        / "x86_64-unknown-linux-musl"
        / "bin"
        / "codex"
    )
    (nm / ".bin").mkdir()
    (nm / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    got = resolve("codex", path_env=str(nm / ".bin"), fallback_dirs=())
    assert got.path == native and "codex.js" in got.unwrapped and shim.exists()


def test_codex_shim_without_native_binary_is_refused(tmp_path: Path) -> None:
    nm = tmp_path / "node_modules"
    _exe(nm / "@openai" / "codex" / "bin" / "codex.js", b"#!/usr/bin/env node\n")
    (nm / ".bin").mkdir()
    (nm / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    with pytest.raises(ProviderFailure) as info:
        resolve("codex", path_env=str(nm / ".bin"), fallback_dirs=())
    assert info.value.code == "provider-not-found"


def test_claude_stub_without_postinstall_uses_the_platform_package(tmp_path: Path) -> None:
    nm = tmp_path / "node_modules"
    _exe(nm / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe", b"stub: run postinstall\n")
    native = _exe(nm / "@anthropic-ai" / "claude-code-linux-x64" / "claude")
    (nm / ".bin").mkdir()
    (nm / ".bin" / "claude").symlink_to("../@anthropic-ai/claude-code/bin/claude.exe")
    got = resolve("claude", path_env=str(nm / ".bin"), fallback_dirs=())
    assert got.path == native


def test_claude_after_postinstall_is_already_native(tmp_path: Path) -> None:
    nm = tmp_path / "node_modules"
    exe = _exe(nm / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe")
    (nm / ".bin").mkdir()
    (nm / ".bin" / "claude").symlink_to("../@anthropic-ai/claude-code/bin/claude.exe")
    got = resolve("claude", path_env=str(nm / ".bin"), fallback_dirs=())
    assert got.path == exe and got.unwrapped == "symlink"


@pytest.mark.skipif(
    not (CHECKOUT / "node_modules" / ".bin" / "codex").exists(),
    reason="pinned CLIs not installed in this checkout (run scripts/setup)",
)
def test_pinned_checkout_clis_resolve_to_native_elf() -> None:
    for name in ("claude", "codex"):
        got = resolve(name, path_env="/nonexistent")
        assert got.via == "checkout"
        with got.path.open("rb") as fh:
            assert fh.read(4) == b"\x7fELF"


def test_checkout_first_prefers_the_pinned_folder(tmp_path: Path) -> None:
    on_path = _exe(tmp_path / "bin" / "codex")
    pinned = _exe(tmp_path / "nm" / ".bin" / "codex")
    default = resolve("codex", path_env=str(on_path.parent), fallback_dirs=(pinned.parent,))
    first = resolve(
        "codex", path_env=str(on_path.parent), fallback_dirs=(pinned.parent,), checkout_first=True
    )
    assert default.path == on_path and first.path == pinned and first.via == "checkout"

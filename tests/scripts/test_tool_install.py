"""factory installed as an isolated tool (issue 9 §6): ``uv tool install`` and ``pipx
install`` of the built wheel, each into its own environment (the import name ``factory``
is also factory_boy's: a tool environment is where the two never meet). The installed
command runs, ``factory doctor`` says which provider CLIs it uses — none until the user's
own are on PATH — and the demo runs end to end with the user's CLIs on PATH.

The dependencies are resolved from PyPI within ``requirements.lock`` (its pins as
constraints), so the tool gets the versions the checkout is tested with.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from factory import __version__

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy of the checkout's files: a build in place leaves build/ and
    # *.egg-info in the checkout.
    import shutil

    src = tmp_path_factory.mktemp("src")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in listed)):
        if (REPO / rel).is_file() and not rel.startswith(("tests/", "node_modules")):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(VENV_BIN / "uv"), "build", "--wheel", "--out-dir", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("factory_receipts-*.whl")
    return built


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """requirements.lock's pins without hashes (a constraints file takes no hashes)."""
    pins = [
        line.rstrip(" \\")
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if re.match(r"^[A-Za-z0-9._-]+==", line)
    ]
    path = tmp_path_factory.mktemp("c") / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    return path


def base_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    # The machine's own package settings (index, CA bundle) apply to the tools as to pip.
    keep = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("PIP_", "UV_CACHE", "SSL_CERT")) or k in ("UV_INDEX_URL",)
    }
    cert = os.environ.get("PIP_CERT")
    if cert and "SSL_CERT_FILE" not in keep:
        keep["SSL_CERT_FILE"] = cert  # uv reads SSL_CERT_FILE, pip reads PIP_CERT
    return {
        **keep,
        "HOME": str(home),
        "PATH": f"{tmp / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
    }


def run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 900) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc.stdout


def check_installed(tmp: Path, env: dict[str, str]) -> None:
    factory = tmp / "bin" / "factory"
    version = run([str(factory), "--version"], env, tmp)
    assert version.startswith(f"factory {__version__}\npinned claude: @anthropic-ai/claude-code@")
    # The JSON Schemas ship in the package.
    shipped = REPO / "factory" / "documents" / "schemas" / "agent-receipt.json"
    assert run([str(factory), "schema", "agent-receipt"], env, tmp) == shipped.read_text()
    # No CLI on PATH and no checkout: doctor says so, and what to do.
    report = json.loads(run([str(factory), "doctor"], env, tmp))
    claude = report["profiles"]["claude"]
    assert claude["binary"] is None
    assert "factory providers install" in claude["problems"][0]
    assert report["profiles"]["claude"]["pinned"] == "2.1.332"  # the pins ship in the wheel
    # The demo without providers: where it looked (real folders) and how to install them;
    # refused before its folder exists and before any REHEARSAL banner.
    refused = subprocess.run(
        [str(factory), "demo", "--dir", str(tmp / "no-demo")],
        env=env, cwd=tmp, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert "factory: provider-missing: claude cannot start" in refused.stderr
    home = Path(env["HOME"]) / ".local/share/factory/providers/node_modules/.bin"
    assert f"in {home}, " in refused.stderr and "factory providers install" in refused.stderr
    assert "<path>" not in refused.stderr and "REHEARSAL" not in refused.stderr
    assert not (tmp / "no-demo").exists()
    # Completion ships with the tool (argcomplete is a dependency).
    assert "_python_argcomplete" in run([str(factory), "completion", "bash"], env, tmp)
    # The user's own CLIs on PATH: found there, at the pinned version.
    users = {**env, "PATH": f"{REPO / 'node_modules' / '.bin'}:{env['PATH']}"}
    report = json.loads(run([str(factory), "doctor"], users, tmp))
    for name in ("claude", "codex"):
        entry = report["profiles"][name]
        assert entry["binary"]["via"] == "PATH" and entry["matches_pin"] is True, entry
    # The main job, from the installed tool, in a folder of the user's.
    demo = tmp / "demo"
    out = run([str(factory), "demo", "--dir", str(demo), "--json"], users, tmp, timeout=600)
    assert json.loads(out)["verification"]["ok"] is True
    assert json.loads((demo / "receipt.json").read_bytes())["status"] == "completed"


@pytest.mark.realcli
def test_uv_tool_install_of_the_wheel(tmp_path: Path, wheel: Path, constraints: Path) -> None:
    env = {
        **base_env(tmp_path),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON": sys.executable,
    }
    run(
        [str(VENV_BIN / "uv"), "tool", "install", "--constraints", str(constraints), str(wheel)],
        env,
        tmp_path,
    )
    check_installed(tmp_path, env)


@pytest.mark.realcli
def test_pipx_install_of_the_wheel(tmp_path: Path, wheel: Path, constraints: Path) -> None:
    env = {
        **base_env(tmp_path),
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
        "PIPX_DEFAULT_PYTHON": sys.executable,
    }
    run(
        [str(VENV_BIN / "pipx"), "install", "--pip-args", f"-c {constraints}", str(wheel)],
        env,
        tmp_path,
    )
    check_installed(tmp_path, env)

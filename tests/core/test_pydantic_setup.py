"""factory.pydantic_setup: no plugin judges a document, and no entry-point machinery is
imported for finding none; any other setting leaves pydantic's own loader in charge."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pydantic
import pytest

from factory.pydantic_setup import ALL_DISABLED, LOADER, disable_plugins

PYDANTIC = Path(pydantic.__file__).parent

#: A new process that runs a command building every review model, then reports what
#: it imported and which plugins pydantic's validator factory saw.
PROBE = """\
import json, sys
from factory.cli.main import main
code = main(["review", "schema", "reviewer"])
from pydantic.plugin._loader import get_plugins
sys.stderr.write(json.dumps({
    "code": code,
    "metadata": "importlib.metadata" in sys.modules,
    "plugins": len(list(get_plugins())),
    "loader_doc": sys.modules["pydantic.plugin._loader"].__doc__,
}))
"""


def _probe(setting: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, check=True, timeout=60
    )
    assert json.loads(proc.stdout)["title"]  # the schema really was generated
    report: dict[str, object] = json.loads(proc.stderr)
    assert report["code"] == 0
    return report


@pytest.mark.parametrize("setting", [None, *sorted(ALL_DISABLED)])
def test_a_process_that_disables_every_plugin_never_imports_the_entry_point_machinery(
    setting: str | None,
) -> None:
    report = _probe(setting)
    assert report["metadata"] is False
    assert report["plugins"] == 0
    assert str(report["loader_doc"]).startswith("factory:")


@pytest.mark.parametrize("setting", ["some_plugin", "a,b", "", "TRUE", "__ALL__"])
def test_a_setting_that_keeps_some_plugins_leaves_pydantics_loader_in_charge(
    setting: str,
) -> None:
    """Empty allows every plugin; pydantic compares the values case-sensitively."""
    report = _probe(setting)
    assert report["metadata"] is True  # pydantic's loader scanned the entry points
    assert not str(report["loader_doc"] or "").startswith("factory:")


def test_the_caller_setting_wins_and_an_imported_loader_is_left_alone() -> None:
    env: dict[str, str] = {}
    modules: dict[str, types.ModuleType] = {}
    assert disable_plugins(env, modules) is True
    assert env == {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
    assert list(modules[LOADER].get_plugins()) == []
    assert disable_plugins(env, modules) is True  # idempotent: ours is already there

    theirs = {LOADER: types.ModuleType(LOADER)}
    assert disable_plugins({}, theirs) is False
    assert not hasattr(theirs[LOADER], "get_plugins")

    kept: dict[str, types.ModuleType] = {}
    env = {"PYDANTIC_DISABLE_PLUGINS": "a,b"}
    assert disable_plugins(env, kept) is False
    assert env == {"PYDANTIC_DISABLE_PLUGINS": "a,b"} and kept == {}


def _imports_of_loader(path: Path) -> list[list[str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_loader"):
            found.append([alias.name for alias in node.names])
        elif isinstance(node, ast.Import) and any(a.name == LOADER for a in node.names):
            found.append(["<module>"])
    return found


def test_the_pinned_pydantic_asks_its_loader_for_get_plugins_alone() -> None:
    """The stand-in replaces a private module: a pydantic that asks it for anything else
    (or from anywhere else) fails here rather than at a user's first model."""
    users = {
        str(p.relative_to(PYDANTIC)): _imports_of_loader(p)
        for p in PYDANTIC.rglob("*.py")
        if p.name != "_loader.py" and _imports_of_loader(p)
    }
    assert users == {"plugin/_schema_validator.py": [["get_plugins"]]}


@pytest.mark.parametrize("value", sorted(ALL_DISABLED))
def test_pydantics_own_loader_returns_no_plugin_for_the_same_settings(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("_real_loader", PYDANTIC / "plugin/_loader.py")
    assert spec is not None and spec.loader is not None
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", value)
    assert list(real.get_plugins()) == []
    assert real._plugins is None  # no entry point was scanned
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "no_such_plugin")
    real.get_plugins()
    assert isinstance(real._plugins, dict)  # the twin: any other setting scans them

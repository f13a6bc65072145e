"""The tracer's processes import only the SDK side they use (issue 25): with
:func:`factory.bus.sdk.bare_packages` the client session loads without the SDK's server,
and the server without the SDK's client; the plain import (the negative control) loads
both. Each check runs in a fresh interpreter (the SDK is imported once per process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
{setup}
import {module}
print(" ".join(sorted(m for m in ("mcp.server.mcpserver", "mcp.client.client")
                      if m in sys.modules)))
"""
BARE = "from factory.bus.sdk import bare_packages; bare_packages()"


def _loaded(module: str, setup: str) -> set[str]:
    code = PROBE.format(setup=setup, module=module)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("module", "other"),
    [("mcp.client.session", "mcp.server.mcpserver"), ("mcp.server.mcpserver", "mcp.client.client")],
)
def test_one_side_of_the_sdk_loads_without_the_other(module: str, other: str) -> None:
    assert other not in _loaded(module, BARE)
    assert other in _loaded(module, "")  # the plain import loads the whole SDK


def test_an_sdk_already_imported_is_left_as_it_is() -> None:
    code = "import mcp, sys\n" + BARE + "\nprint(hasattr(sys.modules['mcp'], 'CallToolRequest'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"  # the package's own __init__ ran and was kept


@pytest.mark.parametrize("enabled_before", [True, False])
def test_collector_paused_pauses_then_restores_the_collector(enabled_before: bool) -> None:
    import gc

    from factory.bus.sdk import collector_paused

    was = gc.isenabled()
    (gc.enable if enabled_before else gc.disable)()
    try:
        frozen = gc.get_freeze_count()
        kept: list[object] = [[]]  # an object alive across the pause ends up frozen
        with pytest.raises(ValueError), collector_paused():
            assert not gc.isenabled()
            kept.append([kept])
            raise ValueError("a start-up that fails still restores the collector")
        assert gc.isenabled() is enabled_before
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()

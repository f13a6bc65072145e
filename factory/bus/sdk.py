"""Import only the parts of the MCP SDK the bus uses (issue 25, the tracer's start-up).

``import mcp.<anything>`` first runs ``mcp/__init__.py``, and that imports the SDK's whole
client, its whole server (with an HTTP stack) and every protocol type: about 0.3 s of CPU
in each of the tracer's two processes, which need one side each. :func:`bare_packages`
registers the SDK's package folders (``mcp``, ``mcp.client``, ``mcp.server``) as bare
packages — their search path only, their ``__init__`` not run — so that importing a
submodule (``mcp.client.session``, ``mcp.server.mcpserver``, ``mcp.shared.message``) loads
that submodule and what it imports itself, nothing more.

The modules loaded are the SDK's own, unchanged: the client session, the server, the
framing and the message types are the ones a full import gives, so the MCP transport the
smoke exercises is the same. Nothing is changed when the SDK is already imported (a host
process that imported it keeps its packages), and a package the interpreter cannot find is
left for the ordinary import to report.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import sys
import types
from collections.abc import Iterator

PACKAGES = ("mcp", "mcp.client", "mcp.server")


def bare_packages(names: tuple[str, ...] = PACKAGES) -> None:
    """Register each of ``names`` (parents first) as a bare package unless imported."""
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return
        module = types.ModuleType(name)
        module.__path__ = list(spec.submodule_search_locations)
        module.__spec__ = spec
        module.__package__ = name
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run an import-heavy start-up without the cyclic garbage collector, then freeze what
    it built.

    Importing the SDK builds several hundred pydantic models; each allocation burst sets
    off generation-0/1/2 collections that walk the growing heap and free nearly nothing
    (the classes and schemas live as long as the process). Paused, they do not run; on
    exit :func:`gc.freeze` moves everything alive into the permanent generation, so later
    collections never walk it again, and the collector is restored as it was.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()

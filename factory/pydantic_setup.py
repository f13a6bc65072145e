"""No pydantic plugin judges a factory document, and the process does not pay to look for one.

pydantic calls plugins from every validator it builds. It finds them through the
``pydantic`` entry-point group, and its loader module imports :mod:`importlib.metadata`
at its top (with ``email``, ``zipfile``, ``csv``: about 20 ms of a new process on the
reference machine) even when ``PYDANTIC_DISABLE_PLUGINS`` tells it to return none.

:func:`disable_plugins` runs before the first model is built. Unless the caller's
environment says otherwise it sets ``PYDANTIC_DISABLE_PLUGINS=__all__``. When the setting
disables every plugin (one of the three values pydantic's loader treats that way), it
registers a loader that returns no plugin (which is what pydantic's own loader returns
then), so the entry-point machinery is never imported. Any other setting (empty: every
plugin; a list of plugin names to skip) leaves pydantic's loader alone.

The registered loader stands in for a private module of the pinned pydantic:
``tests/core/test_pydantic_setup.py`` checks that pydantic still imports only
``get_plugins`` from it, that its loader still returns no plugin for these values, and
that a process that disables plugins never imports :mod:`importlib.metadata`.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import MutableMapping
from typing import Final

#: pydantic's plugin loader module, imported by ``pydantic.plugin._schema_validator``.
LOADER: Final = "pydantic.plugin._loader"
#: The values of ``PYDANTIC_DISABLE_PLUGINS`` for which pydantic loads no plugin at all.
ALL_DISABLED: Final = frozenset({"__all__", "1", "true"})


def _no_plugins() -> tuple[()]:
    return ()


def disable_plugins(
    environ: MutableMapping[str, str] | None = None,
    modules: MutableMapping[str, types.ModuleType] | None = None,
) -> bool:
    """Disable pydantic plugins unless ``environ`` chose otherwise; return whether the
    no-plugin loader is in place (``False`` if pydantic's own loader was already imported
    or the setting keeps some plugins)."""
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    setting = environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if setting not in ALL_DISABLED:
        return False
    if LOADER in modules:
        return getattr(modules[LOADER], "get_plugins", None) is _no_plugins
    loader = types.ModuleType(LOADER, "factory: every pydantic plugin disabled; none loaded")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    modules[LOADER] = loader
    return True

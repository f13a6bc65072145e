"""How factory starts itself: this interpreter, isolated (``-I``), running the installed
``factory`` package — never whatever ``factory`` the current folder holds.

``python -m factory`` puts the current folder first on the module path, so a folder (or a
repository, where a git hook or a provider runs) with a top-level ``factory/`` package
would have its ``__main__.py`` run instead. ``-I`` leaves the current folder and the
``PYTHON*`` variables out; the package then comes from this interpreter's own
installation. Every child factory starts of itself, and every command it prints or writes
for a program to run (git hooks, MCP client configurations), uses these words.
"""

from __future__ import annotations

import sys

ISOLATED = ("-I",)


def factory_argv(*args: str, unbuffered: bool = False) -> list[str]:
    """``<this python> -I [-u] -m factory ARGS``."""
    return [sys.executable, *ISOLATED, *(("-u",) if unbuffered else ()), "-m", "factory", *args]

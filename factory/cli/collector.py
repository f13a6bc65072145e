"""A command's module imports without the cyclic garbage collector walking them.

Importing the review path makes tens of thousands of objects that live as long as the
process does: modules, functions, pydantic models with their schemas and validators. The
collector's young generations fill every 700 allocations, and each collection walks the
newest of them again without freeing any. In a new finalize process that is about 20 ms
of ~200 (scripts/bench_review; a collection of the whole import is what ``gc.enable()``
alone would then run, so :func:`imports_settled` also freezes them).

Only the imports go under it: the command's own work runs with the collector as the
process had it, and what the imports made is moved to the permanent generation, which
the collector never walks (:func:`gc.freeze`). A frozen object that later becomes part of
a garbage cycle is never freed, so the freeze happens only when the block imported a
module: a process that calls the CLI in-process again and again (a test run) freezes
once per new import, not its whole heap at every call.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def imports_settled() -> Iterator[None]:
    """Run the block (a handler's imports) with the collector paused; if it imported a
    module, freeze what exists; restore the collector as it was, also when it raises."""
    was_enabled = gc.isenabled()
    modules = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) != modules:
            gc.freeze()
        if was_enabled:
            gc.enable()

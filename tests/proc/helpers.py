"""Real child programs for the runner tests (see ``tests/support/proc_tree.py``)."""

from __future__ import annotations

import sys

from tests.support.proc_tree import TREE, recorded, survivors

PY = sys.executable

# The process tree and the survivor check are shared with scripts/bench_supervise.
__all__ = ["PY", "TREE", "recorded", "survivors"]

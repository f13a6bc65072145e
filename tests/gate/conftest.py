"""Hypothesis for the gate's property tests: no example database written into the
checkout, no per-example deadline (the machine is shared, timing is not a property), and a
fixed seed so a CI failure reproduces."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("factory", database=None, deadline=None, derandomize=True)
settings.load_profile("factory")

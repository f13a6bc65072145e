"""Thin command-line layer: parse flags, call the core, print results (SPEC F-2)."""

"""Scenario files shipped with factory (package data, so wheels carry them)."""

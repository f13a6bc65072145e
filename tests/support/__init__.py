"""Helpers shared by the test suite: real git repositories, CLI runners."""

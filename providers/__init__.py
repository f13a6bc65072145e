"""The closed provider profiles (SPEC P-2): ``claude`` and ``codex``. Nothing else.

There is no registry: the two constructors below are the only way to obtain a profile,
and no configuration file or environment variable can add one, change an argv or widen
a child environment.
"""

from __future__ import annotations

from factory.provider_api import AgentProfile, ReviewerProfile
from providers.claude import ClaudeProfile
from providers.codex import CodexProfile
from providers.common import Effects

__all__ = ["ClaudeProfile", "CodexProfile", "Effects", "claude_profile", "codex_profile"]


def claude_profile(effects: Effects | None = None) -> AgentProfile:
    """The ``claude`` profile (roles ``worker`` and ``repair``)."""
    return ClaudeProfile(effects)


def codex_profile(effects: Effects | None = None) -> ReviewerProfile:
    """The ``codex`` profile (role ``reviewer``)."""
    return CodexProfile(effects)

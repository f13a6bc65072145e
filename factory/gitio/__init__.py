"""Read-only git queries for the agent run (SPEC A-1, A-3, A-4).

Every call runs the git CLI with an argv list, ``--no-optional-locks``, and an environment
built from an allow-list (no caller ``GIT_*`` variable ever reaches git). Trees that must
include untracked files are built through a *temporary* index, never the real one.
"""

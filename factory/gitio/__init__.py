"""Git for the agent run: it never moves HEAD, the index, refs or the worktree's files
(SPEC A-1, A-3, A-4); building trees does add unreferenced objects (see :mod:`.run`).

Every call runs the git CLI with an argv list, ``--no-optional-locks``, and an environment
built from an allow-list (no caller ``GIT_*`` variable ever reaches git). Trees that must
include untracked files are built through a *temporary* index, never the real one.
"""

"""Child environments built from allow-lists, never inherited (SPEC P-1, P-3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Names every child may receive from the caller's environment when present: locale,
# identity, temp folder and the search path. Nothing that routes, authenticates or
# configures a tool.
BASE_ALLOW: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
)


# Short local commands (git, the demo's git, the bus server child) take the same names plus
# the folder of the user's own git configuration; a caller's GIT_* is never among them.
LOCAL_ALLOW: tuple[str, ...] = (*BASE_ALLOW, "XDG_CONFIG_HOME")


def pick(source: Mapping[str, str], allow: Iterable[str] = BASE_ALLOW) -> dict[str, str]:
    """The entries of ``source`` whose names are in ``allow`` (exact, case-sensitive)."""
    return {name: source[name] for name in allow if name in source}

"""What a repository's own configuration would make factory's remote git run, or where it
would make it connect (issue 24 §1).

Some settings cannot be pinned off with ``-c``: a ``url.<base>.insteadOf`` rewrite is
applied after every command-line setting, ``credential.helper`` accumulates (an empty
value resets the list, but then the user's own helpers are gone too), and a proxy or a
remote helper (``remote.<name>.vcs``) chooses a program or a host. So factory reads the
configuration git would use, with the scope of each entry, and refuses before any network
call when the *repository* (its ``config``, ``config.worktree``, or a file either includes)
sets one that applies to the remote at hand. The same settings in the user's or the
system's configuration are the operator's own and are honoured: that is where a credential
helper or a proxy normally lives.

Reading configuration runs no program (``git config --show-scope -z``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from factory.gitio.run import run_git

REPO_SCOPES = ("local", "worktree")
#: Keys whose repository value chooses a program or a destination, whatever the URL.
_ALWAYS = re.compile(r"^(core\.gitproxy|core\.askpass|http\.proxy|credential\.helper)$")
#: Keys scoped by a URL pattern (``credential.<url>.helper``, ``http.<url>.proxy``): git's
#: URL matching has wildcards and normalisation, so any of them in the repository counts.
_BY_URL = re.compile(r"^(credential|http)\..+\.(helper|proxy)$", re.IGNORECASE)
_REWRITE = re.compile(r"^url\.(?P<base>.+)\.(insteadof|pushinsteadof)$")


def scoped_config(root: Path) -> list[tuple[str, str, str]]:
    """``(scope, key, value)`` for every entry git would read in ``root`` (keys lowercased
    as git prints them; the subsection keeps its case)."""
    out = run_git(root, ["config", "--show-scope", "-z", "--list"], what="git config")
    entries = []
    fields = out.split(b"\0")
    for i in range(0, len(fields) - 1, 2):
        scope = fields[i].decode("utf-8", "replace")
        key, _, value = fields[i + 1].decode("utf-8", "replace").partition("\n")
        entries.append((scope, key, value))
    return entries


def steering_keys(
    entries: Sequence[tuple[str, str, str]], remote: str, urls: Sequence[str]
) -> list[str]:
    """The repository-scoped keys among ``entries`` that would steer remote git for
    ``remote`` (a configured remote's name) reaching ``urls`` (pure)."""
    found = []
    for scope, key, value in entries:
        if scope not in REPO_SCOPES:
            continue
        lower = key.lower()
        own = (f"remote.{remote}.proxy".lower(), f"remote.{remote}.vcs".lower())
        chooses = bool(_ALWAYS.match(lower) or lower in own or _BY_URL.match(key))
        rewrites = bool(_REWRITE.match(lower)) and any(value and u.startswith(value) for u in urls)
        if chooses or rewrites:
            found.append(key)
    return sorted(set(found))

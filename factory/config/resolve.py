"""Where the config files are, and which value wins: flag > repository file > user file >
built-in default, each value with where it came from.

Pure except for :func:`find_files` (the file system, and git to find a repository's top
level through the safe runner in :mod:`factory.gitio`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.config.load import ConfigFile, Role, above_users, read
from factory.config.table import Binding

FILE_NAME = "factory.toml"


@dataclass(frozen=True, slots=True)
class Resolved:
    """The value one key gives its dest, and where it came from (``file`` for a file)."""

    binding: Binding
    value: Any
    source: Role
    file: Path | None = None


@dataclass(frozen=True, slots=True)
class Searched:
    """The files searched: the repository's (``None`` outside a repository) and the user's
    (``None`` without a home folder)."""

    repository: Path | None
    user: Path | None


def user_config_path(env: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_CONFIG_HOME/factory/factory.toml``; ``~/.config/...`` when unset or relative
    (the XDG rule: a relative value is ignored). ``None`` when no home folder is known: a
    relative "home" would read a file from wherever the command runs."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "factory" / FILE_NAME
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return None
    return Path(home) / ".config" / "factory" / FILE_NAME


def repository_top(folder: Path) -> Path | None:
    """The top level of the checkout containing ``folder``; ``None`` when there is none
    (the command itself judges a bad ``--repo``)."""
    from factory.gitio.discover import NotARepository, discover

    try:
        return discover(folder).root
    except (NotARepository, OSError):
        return None


def searched(repo_folder: Path, env: Mapping[str, str] | None = None) -> Searched:
    top = repository_top(repo_folder)
    return Searched(None if top is None else top / FILE_NAME, user_config_path(env))


def read_files(where: Searched) -> list[ConfigFile]:
    """The files that exist, repository first (it wins over the user's)."""
    files = []
    if where.repository is not None:
        repo = read(where.repository, "repository")
        if repo is not None:
            files.append(repo)
    user = None if where.user is None else read(where.user, "user")
    if user is not None:
        if files:
            above_users(files[0], user)
        files.append(user)
    return files


def resolve(bindings: Iterable[Binding], files: list[ConfigFile]) -> dict[str, Resolved]:
    """For each binding some file sets, the winning value (the first file that sets it)."""
    out: dict[str, Resolved] = {}
    for binding in bindings:
        for file in files:
            if binding.key in file.values:
                out[binding.key] = Resolved(binding, file.values[binding.key], file.role, file.path)
                break
    return out

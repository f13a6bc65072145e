"""A repository's effective git configuration, read once, and what it would make git run.

:func:`read_config` lists the configuration git would use in a folder (system, global,
repository, worktree and command scopes, includes resolved by git itself) with
``git config -z --list``; reading configuration runs no program.

Two things are derived from it:

* :meth:`RepoConfig.no_filters_env`: environment entries (``GIT_CONFIG_COUNT`` /
  ``GIT_CONFIG_KEY_<n>`` / ``GIT_CONFIG_VALUE_<n>``, the command scope, which wins over
  every file) that blank every configured filter driver's ``clean``, ``smudge`` and
  ``process`` command and clear ``required``. git treats an empty command as "no filter",
  so ``git status`` compares the raw bytes instead of piping them through a program, and
  ``git hash-object`` applies only its built-in conversions. Keys travel in the
  environment rather than as ``-c`` arguments because a driver's name may contain ``=``.
* :meth:`RepoConfig.settings`: the effective ``core.autocrlf``, ``core.eol``,
  ``core.fileMode`` and ``core.symlinks`` (each a string, or ``None`` when no scope sets
  it), which decide how git itself would convert the bytes a candidate consists of.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from factory.gitio.run import run_git

FILTER_COMMANDS = ("clean", "smudge", "process")
SETTING_KEYS = {
    "autocrlf": "core.autocrlf",
    "eol": "core.eol",
    "filemode": "core.filemode",
    "symlinks": "core.symlinks",
}


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """Every ``(key, value)`` git lists, in its order (later wins). ``value`` is ``None``
    for a bare key (``[core] bare``), which git reads as boolean true. Section and variable
    names are lower case as git prints them; a subsection keeps its exact bytes."""

    entries: tuple[tuple[str, str | None], ...]

    def last(self, key: str) -> str | None:
        """The effective value of ``key`` (``"true"`` for a bare key), or ``None``."""
        found: str | None = None
        seen = False
        for k, v in self.entries:
            if k == key:
                found, seen = v, True
        if not seen:
            return None
        return "true" if found is None else found

    def filter_drivers(self) -> tuple[str, ...]:
        """Names of every filter driver the configuration defines anything for."""
        names: set[str] = set()
        for key, _ in self.entries:
            section, _, rest = key.partition(".")
            sub = rest.rpartition(".")[0]
            if section == "filter" and sub:
                names.add(sub)
        return tuple(sorted(names))

    def active_filters(self) -> frozenset[str]:
        """Drivers with a non-empty ``clean`` or ``process`` command: a file with one of
        these in its ``filter`` attribute would be stored as a program's output."""
        return frozenset(
            name
            for name in self.filter_drivers()
            if self.last(f"filter.{name}.clean") or self.last(f"filter.{name}.process")
        )

    def no_filters_env(self) -> dict[str, str]:
        """Environment entries that switch every configured filter driver off."""
        pairs: list[tuple[str, str]] = []
        for name in self.filter_drivers():
            pairs += [(f"filter.{name}.{cmd}", "") for cmd in FILTER_COMMANDS]
            pairs.append((f"filter.{name}.required", "false"))
        env = {"GIT_CONFIG_COUNT": str(len(pairs))}
        for i, (key, value) in enumerate(pairs):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        return env

    def settings(self) -> dict[str, str | None]:
        """``{autocrlf, eol, filemode, symlinks}``: effective values, ``None`` when unset."""
        return {name: self.last(key) for name, key in SETTING_KEYS.items()}


def parse_listing(out: bytes) -> RepoConfig:
    """Parse ``git config -z --list``: records ``key LF value NUL`` (``key NUL`` if bare)."""
    entries: list[tuple[str, str | None]] = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        key, sep, value = rec.partition(b"\n")
        text = value.decode("utf-8", "surrogateescape") if sep else None
        entries.append((key.decode("utf-8", "surrogateescape"), text))
    return RepoConfig(tuple(entries))


def read_config(cwd: Path) -> RepoConfig:
    """The effective configuration in ``cwd`` (a worktree or repository folder).

    Raises:
        GitFailure: git could not read it (e.g. a malformed configuration file).
    """
    return parse_listing(run_git(cwd, ["config", "-z", "--list"], what="git config --list"))


def with_env(*parts: Mapping[str, str] | None) -> dict[str, str]:
    """Merge environment fragments (later wins)."""
    out: dict[str, str] = {}
    for part in parts:
        if part:
            out.update(part)
    return out

"""The agent run's derivations checked against the former code paths (issue 25 folds).

:func:`checking_folds` wraps the run's derivation and index-entries reuse so that each
derivation made with a reused index read is made again the former way — with no ``index``
(``git ls-files`` lists the worktree) and the former two passes (every listed path read
alone, then a separate walk for special files) — and each index-entries digest the run
takes (reused or not) is compared with a fresh ``git ls-files -s --debug`` read. Every
difference is recorded in the returned list instead of failing inside the run.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import factory.agent.run_state as run_state_mod
import factory.gitio.snapshot as snap_mod
from factory.gitio.candidate import derive as real_derive
from factory.gitio.index_entries import read_index_entries
from factory.gitio.rawfs import RawReader, StatCache


def old_special_walk(root: Path, skip: Collection[bytes]) -> list[bytes]:
    """The former special-files walk (without its ``git check-ignore`` step)."""
    top = os.fsencode(root)
    found: list[bytes] = []
    stack: list[bytes] = [b""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(os.path.join(top, rel) if rel else top)
        except OSError:
            continue
        with it:
            for de in it:
                name = de.name
                path = rel + b"/" + name if rel else name
                if not rel and name == b".git":
                    continue
                if de.is_dir(follow_symlinks=False):
                    if path not in skip and not os.path.lexists(os.path.join(de.path, b".git")):
                        stack.append(path)
                elif not de.is_file(follow_symlinks=False) and not de.is_symlink():
                    mode = os.lstat(de.path).st_mode
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                        found.append(path)
    return found


def two_passes(
    root: Path,
    object_format: str,
    previous: StatCache | None,
    wanted: Iterable[bytes],
    skip: Collection[bytes],
) -> tuple[RawReader, list[bytes]]:
    """The former composition in :func:`factory.gitio.rawfs.read_worktree`'s shape."""
    return RawReader(root, object_format, previous), old_special_walk(root, skip)


def _outcome(call: Callable[[], Any]) -> tuple[object, ...]:
    try:
        d = call()
    except Exception as error:  # the same refusal either way is the point
        return ("error", type(error).__name__, str(error))
    return ("ok", d.candidate_tree, d.status, d.patch, d.files)


def _given(value: Any, failure: Exception | None) -> Any:
    if failure is not None:
        raise failure
    return value


@contextlib.contextmanager
def checking_folds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every difference between the folded and the former derivations and index
    reads of the agent runs made inside (see the module docstring)."""
    found: list[str] = []
    real_entries = run_state_mod.RunState.index_entries

    def derive(*args: Any, **kw: Any) -> Any:
        reused = kw.get("index") is not None
        failure: Exception | None = None
        try:
            new = real_derive(*args, **kw)
        except Exception as error:
            failure, new = error, None
        new_outcome = _outcome(lambda: _given(new, failure))
        with monkeypatch.context() as m:
            m.setattr(snap_mod, "read_worktree", two_passes)
            old_outcome = _outcome(lambda: real_derive(*args, **{**kw, "index": None}))
        if new_outcome != old_outcome:
            found.append(f"derive (index reused: {reused}): {new_outcome!r} != {old_outcome!r}")
        if failure is not None:
            raise failure
        return new

    async def index_entries(self: Any) -> str:
        got: str = await real_entries(self)
        fresh = read_index_entries(self.wt.root).digest
        if got != fresh:
            found.append(f"index entries reused stale: {got} != {fresh}")
        return got

    monkeypatch.setattr(run_state_mod, "derive", derive)
    monkeypatch.setattr(run_state_mod.RunState, "index_entries", index_entries)
    yield found

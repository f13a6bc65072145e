"""Count the whole-tree passes of a piece of work (issue 25, "Speed"): deterministic, not
timed, so a test can hold the count and a benchmark can report it.

A *whole-tree pass* is work that visits every file of the worktree or every index entry:

* a git command that reads the whole index or scans the worktree: ``status``,
  ``ls-files``, ``ls-tree -r``, ``check-attr --stdin`` (over every path), ``add``,
  ``diff-files``, ``diff-index``, ``update-index --refresh``;
* factory's own walk of the worktree's folders (:func:`factory.agent.binding.bind_tree`,
  :func:`factory.gitio.gitdata.special_files`);
* factory's own ``lstat`` of every listed path (:func:`factory.gitio.snapshot.take_baseline`);
* a snapshot's one walk that both reads the listed paths it meets and finds the special
  files (:func:`factory.gitio.rawfs.read_worktree`, called by
  :func:`factory.gitio.snapshot.snapshot`): one pass, where it was an ``lstat`` of every
  listed path plus a special-files walk before.

Commands bounded by the change (``hash-object`` of changed paths, ``diff-tree`` of two
trees, ``write-tree`` over a cached tree) and the git directories' binding are not passes.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from factory.gitio.run import GIT_OPTIONS

_WHOLE_GIT = {"status", "ls-files", "add", "diff-files", "diff-index"}


def git_pass(argv: Sequence[str]) -> str | None:
    """The pass name of a git argv (``git`` + factory's options + args), or None."""
    args = list(argv[1 + len(GIT_OPTIONS) :]) if argv[:1] == ["git"] else []
    if not args:
        return None
    sub = args[0]
    if sub == "ls-files" and "--debug" in args:
        return "git ls-files --debug"  # the index entries' digest
    if sub in _WHOLE_GIT:
        return f"git {sub}"
    if sub == "ls-tree" and "-r" in args:
        return "git ls-tree -r"
    if sub == "check-attr" and "--stdin" in args:
        return "git check-attr --stdin"
    if sub == "update-index" and "--refresh" in args:
        return "git update-index --refresh"
    return None


@contextlib.contextmanager
def counting_passes() -> Iterator[Counter[str]]:
    """Count the whole-tree passes made inside the block, by name (module docstring)."""
    import factory.agent.admission as admission
    import factory.agent.binding as binding
    import factory.gitio.gitdata as gitdata
    import factory.gitio.run as gitrun
    import factory.gitio.snapshot as snapshot

    seen: Counter[str] = Counter()
    run_local = getattr(gitrun, "run_local")  # noqa: B009 (patched below by name)

    def spy_git(argv: Sequence[str], **kw: Any) -> Any:
        name = git_pass(list(argv))
        if name is not None:
            seen[name] += 1
        return run_local(argv, **kw)

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            seen[name] += 1
            return fn(*args, **kw)

        return call

    reader = getattr(snapshot, "RawReader")  # noqa: B009 (not re-exported; patched by name)
    walk_read = getattr(snapshot, "read_worktree")  # noqa: B009 (the same)
    patches = [
        (gitrun, "run_local", spy_git),
        (binding, "walk", counted("walk worktree", binding.walk)),
        (gitdata, "special_files", counted("walk special files", gitdata.special_files)),
        (admission, "special_files", counted("walk special files", gitdata.special_files)),
        (snapshot, "RawReader", counted("lstat listed paths", reader)),
        (snapshot, "read_worktree", counted("walk and read listed paths", walk_read)),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    try:
        for mod, name, value in patches:
            setattr(mod, name, value)
        yield seen
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)

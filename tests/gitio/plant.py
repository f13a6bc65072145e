"""Plant every kind of program a repository can name, each writing a marker file if run.

A row of :data:`PROGRAMS` configures one program in a repository (its common config, its
hooks folder or its committed ``.gitattributes``); :func:`marker` is the file the program
creates when git runs it. :data:`TRIGGERS` are plain git commands (the test's own git, not
factory's) that do run each program: the negative-control twin proving a plant is live.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.git import git

HOOKS = [
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "post-index-change",
]

# Attributes committed in the base so the attribute-driven programs apply to every file.
ATTRIBUTES = "* filter=planted diff=planted\n"


def marker(markers: Path, name: str) -> Path:
    return markers / f"ran-{name}"


def _script(markers: Path, name: str, body: str) -> Path:
    path = markers.parent / "bin" / f"{name}.sh"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n: > '{marker(markers, name)}'\n{body}\n")
    path.chmod(0o755)
    return path


def common_dir(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def _config(wt: Path, key: str, value: str) -> None:
    git(wt, "config", key, value)


def _filter(kind: str) -> Callable[[Path, Path], None]:
    def plant(wt: Path, markers: Path) -> None:
        body = "exit 1" if kind == "process" else "cat"
        _config(wt, f"filter.planted.{kind}", str(_script(markers, f"filter-{kind}", body)))

    return plant


def _textconv(wt: Path, markers: Path) -> None:
    _config(wt, "diff.planted.textconv", str(_script(markers, "textconv", 'cat "$1"')))


def _diff_command(wt: Path, markers: Path) -> None:
    _config(wt, "diff.planted.command", str(_script(markers, "diff-command", "exit 0")))


def _diff_external(wt: Path, markers: Path) -> None:
    _config(wt, "diff.external", str(_script(markers, "diff-external", "exit 0")))


def _fsmonitor(wt: Path, markers: Path) -> None:
    _config(wt, "core.fsmonitor", str(_script(markers, "fsmonitor", "exit 1")))


def _hooks_dir(wt: Path, markers: Path) -> None:
    hooks = common_dir(wt) / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        script = _script(markers, "hooks-dir", "exit 0")
        (hooks / name).write_bytes(script.read_bytes())
        (hooks / name).chmod(0o755)


def _hooks_path(wt: Path, markers: Path) -> None:
    folder = markers.parent / "hookspath"
    folder.mkdir(exist_ok=True)
    for name in HOOKS:
        script = _script(markers, "hooks-path", "exit 0")
        (folder / name).write_bytes(script.read_bytes())
        (folder / name).chmod(0o755)
    _config(wt, "core.hooksPath", str(folder))


PROGRAMS: dict[str, Callable[[Path, Path], None]] = {
    "filter-clean": _filter("clean"),
    "filter-smudge": _filter("smudge"),
    "filter-process": _filter("process"),
    "textconv": _textconv,
    "diff-command": _diff_command,
    "diff-external": _diff_external,
    "fsmonitor": _fsmonitor,
    "hooks-dir": _hooks_dir,
    "hooks-path": _hooks_path,
}


def _run(wt: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=wt, capture_output=True, check=False)


def _touch_tracked(wt: Path) -> None:
    target = wt / "README.md"
    target.write_bytes(target.read_bytes())  # same bytes, new stat: git must re-read it


TRIGGERS: dict[str, Callable[[Path], None]] = {
    "filter-clean": lambda wt: (_touch_tracked(wt), _run(wt, "status")),
    "filter-smudge": lambda wt: _run(wt, "cat-file", "--filters", "HEAD:README.md"),
    "filter-process": lambda wt: (_touch_tracked(wt), _run(wt, "status")),
    "textconv": lambda wt: _run(wt, "cat-file", "--textconv", "HEAD:README.md"),
    "diff-command": lambda wt: (_touch_tracked(wt), _run(wt, "diff", "HEAD")),
    "diff-external": lambda wt: _run(wt, "diff", "HEAD"),
    "fsmonitor": lambda wt: _run(wt, "status"),
    "hooks-dir": lambda wt: _run(wt, "commit", "-qam", "trigger"),
    "hooks-path": lambda wt: _run(wt, "commit", "-qam", "trigger"),
}

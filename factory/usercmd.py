"""Commands and paths printed as advice, in the form that works where the user stands.

A "next" hint that says ``factory receipt show …`` is worth nothing when ``factory`` lives
in ``.venv/bin`` and is not on ``PATH`` (observed after ``./scripts/setup``: "command not
found"). These helpers print what works as typed:

* a program is shown by its bare name only when ``PATH`` finds that very file; otherwise
  by its path relative to the user's folder (``.venv/bin/factory``,
  ``node_modules/.bin/claude``, ``../demo``: at most :data:`MAX_CLIMB` folders up), else by
  its absolute path;
* under ``npm run factory:<x>`` a factory command is shown in its npm form
  (``npm run factory:receipt -- show …``) when ``package.json`` has that script, with paths
  relative to the checkout root, where npm runs its scripts whatever folder the user typed
  the command in;
* every word is shell-quoted (:func:`shlex.quote`), so a path with a space still pastes.

The user's folder is ``os.getcwd()``; npm reports the folder the user typed the command in
as ``INIT_CWD``. Pure apart from reading the environment, ``PATH`` and ``package.json``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def _npm_script(environ: Mapping[str, str]) -> str | None:
    event = environ.get("npm_lifecycle_event", "")
    return event if event.startswith("factory:") else None


def user_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user stands: npm's ``INIT_CWD`` under ``npm run``, else the current folder."""
    env = os.environ if environ is None else environ
    init = env.get("INIT_CWD")
    if _npm_script(env) and init and os.path.isabs(init):
        return Path(init)
    return Path(os.getcwd())


#: A relative path may climb at most this many folders (``../../x``); beyond that the
#: absolute path is shown, which reads better than a ladder of ``..``.
MAX_CLIMB = 2


def _relative_or_absolute(path: Path, base: Path) -> str:
    target = os.path.abspath(path)
    rel = os.path.relpath(target, os.path.abspath(base))
    climbs = rel.split(os.sep).count("..")
    if climbs > MAX_CLIMB or (climbs and len(rel) >= len(target)):
        return target
    return rel


def shown_path(path: Path | str, environ: Mapping[str, str] | None = None) -> str:
    """``path`` as an argument that works where the user stands (quoted for a shell).

    Under ``npm run factory:*`` the base is the process's folder (the checkout root, where
    npm runs the script), else the user's folder.
    """
    env = os.environ if environ is None else environ
    base = Path(os.getcwd()) if _npm_script(env) else user_folder(env)
    return shlex.quote(_relative_or_absolute(Path(path), base))


def shown_program(program: Path | str, environ: Mapping[str, str] | None = None) -> str:
    """How to type ``program``: its bare name when ``PATH`` finds this very file, else a
    path (relative below the user's folder, absolute elsewhere), quoted."""
    env = os.environ if environ is None else environ
    program = Path(program)
    found = shutil.which(program.name, path=env.get("PATH", ""))
    if found is not None and _same_file(Path(found), program):
        return shlex.quote(program.name)
    shown = _relative_or_absolute(program, user_folder(env))
    if "/" not in shown:  # a program in the user's own folder still needs ./ to run
        shown = f"./{shown}"
    return shlex.quote(shown)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _npm_scripts(checkout: Path) -> dict[str, str]:
    try:
        scripts = json.loads((checkout / "package.json").read_text(encoding="utf-8"))["scripts"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return scripts if isinstance(scripts, dict) else {}


def factory_program(argv0: str | None = None) -> list[str]:
    """The words that start this very factory: the console script that is running, or
    ``<python> -I -m factory`` when it was started as a module (isolated: never the
    ``factory`` of the folder the command is run in)."""
    first = sys.argv[0] if argv0 is None else argv0
    if Path(first).name == "factory" and os.path.isfile(first):
        return [os.path.abspath(first)]
    from factory.selfexec import factory_argv

    return factory_argv()


def factory_command(
    *args: str | Path,
    environ: Mapping[str, str] | None = None,
    argv0: str | None = None,
    checkout: Path = CHECKOUT,
) -> str:
    """A factory command line that works as typed where the user stands.

    ``args`` are the subcommand words and arguments: a :class:`~pathlib.Path` is shown
    with :func:`shown_path`, a string is quoted as one word.
    """
    env = os.environ if environ is None else environ
    words = [shown_path(a, env) if isinstance(a, Path) else shlex.quote(a) for a in args]
    if _npm_script(env) and args:
        script = f"factory:{args[0]}"
        if script in _npm_scripts(checkout):
            rest = words[1:]
            return " ".join(["npm", "run", script, *(["--", *rest] if rest else [])])
    program = factory_program(argv0)
    head = [shown_program(program[0], env), *(shlex.quote(w) for w in program[1:])]
    return " ".join([*head, *words])

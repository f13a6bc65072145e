"""The crash log: where an internal error's traceback goes (SPEC F-3).

An internal error (exit 1) is a bug in factory. Its user sees one line naming the log
file; the file (mode 0600, never overwritten) records factory's version, the argv, the
Python version and the full traceback, so a bug report carries what is needed to
reproduce it.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path

from factory import __version__


def crash_report(exc: BaseException, argv: list[str] | None = None) -> str:
    """The text of a crash log for ``exc``."""
    text = "".join(traceback.format_exception(exc))
    shown = sys.argv if argv is None else argv
    return (
        f"factory internal error\nfactory: {__version__}\nargv: {shown!r}\n"
        f"python: {sys.version}\n\n{text}"
    )


def write_crash_log(exc: BaseException, folders: Iterable[Path]) -> Path | None:
    """Write the crash log of ``exc`` into the first of ``folders`` that accepts it.

    Returns the file's path, or ``None`` when no folder could hold it (never raises).
    """
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    body = crash_report(exc)
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"factory-error-{stamp}-{os.getpid()}.log"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
            return path
        except OSError:
            continue
    return None

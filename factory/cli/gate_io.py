"""What the ``factory gate`` commands share: the store they open, the one JSON line they
print, the run they load (saying which doubtful acceptances it settled), the files they
read and the instants they parse."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.cli.framework import default_state_dir, emit_stdout, say
from factory.documents.emit import json_line

if TYPE_CHECKING:
    from factory.gate.service import Gate, LoadedRun


def open_gate(args: argparse.Namespace, *, read_only: bool = False) -> Gate:
    """The gate over ``--store``. A read-only command (``status``, ``export``) refuses a
    store that does not exist instead of creating it: reading writes nothing."""
    from factory.gate.errors import RUN_MISSING
    from factory.gate.service import Gate
    from factory.gate.store import SqliteStore

    path = Path(args.store) if args.store else default_state_dir() / "gate.sqlite3"
    if read_only and not path.is_file():
        raise RUN_MISSING(f"no run {args.run!r}: there is no gate store at {path} (none created)")
    return Gate(SqliteStore(path))


def print_json(value: Any) -> None:
    """Print ``value`` as the one JSON line (sorted keys, hostile code points escaped)."""
    emit_stdout(json_line(value, sort_keys=True))


def load_run(gate: Gate, run_id: str) -> LoadedRun:
    """The run ``run_id``; each acceptance whose outcome was unknown and is now settled is
    said on stderr."""
    from factory.display import inert

    run = gate.load(run_id)
    for doubt in run.settled:
        say(inert(f"factory: settled an acceptance whose outcome was unknown: request "
                  f"{doubt['request']} was {doubt['outcome']}"))  # fmt: skip
    return run


def read_file(path: str, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (no symlink), at most ``limit`` of them."""
    from factory.agent.evidence import read_nofollow
    from factory.gate.errors import EVIDENCE_REFUSED

    try:
        data = read_nofollow(Path(path), limit=limit + 1)
    except OSError as exc:
        raise EVIDENCE_REFUSED(f"{what} is not a readable regular file (symlinks refused)") from exc
    if len(data) > limit:
        raise EVIDENCE_REFUSED(f"{what} is larger than {limit} bytes")
    return data


def parse_instant_flag(text: str | None, flag: str) -> int | None:
    """The instant ``text`` (ns since the epoch), ``None`` when the flag was not given."""
    from factory.gate.errors import PARAMS_INVALID
    from factory.gate.values import OutsideDomain, parse_instant

    if text is None:
        return None
    try:
        return parse_instant(text)
    except OutsideDomain as exc:
        raise PARAMS_INVALID(f"{flag}: {exc}") from None

"""The bytes of the event log ``D/events.jsonl`` (SPEC B-3, B-4): lines, parsing, the
fixed point.

Format: one RFC 8785 JSON event per LF-terminated line. A torn tail, a blank line, bad
JSON, a non-object, a missing or unknown ``type``, a schema violation, a non-canonical line,
or an event the reducer refuses (duplicate id, ack by a non-recipient, unminted address, a
handoff with authority, ...) is :class:`~factory.errors.CorruptLog` (exit 4). The log is
never repaired. Writing it (the commit protocol) is :mod:`factory.bus.log`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

from pydantic import Field, ValidationError

from factory.bus.model import EVENT_ADAPTER, EVENT_TYPES, Event
from factory.bus.reducer import HANDOFF_AUTHORITY, NEVER_REPAIRED, ReplayError, State, apply
from factory.documents.canonical import canonical_bytes
from factory.errors import Code, CorruptLog, Refused
from factory.models import StrictModel

LOG_NAME: Final = "events.jsonl"
FIXED_POINT_FORMAT: Final = "factory.event-log-fixed-point/1"
PATH_ROLE: Final = "data-dir/events.jsonl"
MAX_LINE_BYTES: Final = 65_536
CHUNK: Final = 1 << 20
_VALIDATE_JSON: Final = EVENT_ADAPTER.validator.validate_json

_define = CorruptLog.define
BAD_JSON = _define("bad-json", NEVER_REPAIRED)
NOT_AN_OBJECT = _define("not-an-object", NEVER_REPAIRED)
MISSING_TYPE = _define("missing-type", NEVER_REPAIRED)
UNKNOWN_TYPE = _define("unknown-type", NEVER_REPAIRED)
SCHEMA_VIOLATION = _define("schema-violation", NEVER_REPAIRED)
BLANK_LINE = _define("blank-line", NEVER_REPAIRED)
LINE_TOO_LONG = _define("line-too-long", NEVER_REPAIRED)
NOT_CANONICAL = _define("not-canonical", NEVER_REPAIRED)
TORN_TAIL = _define("torn-tail", NEVER_REPAIRED)
LOG_REWRITTEN = _define("log-rewritten", NEVER_REPAIRED)
LOG_NOT_REGULAR = _define("log-not-regular", NEVER_REPAIRED)
LOG_VANISHED = _define("log-vanished", NEVER_REPAIRED)
LOG_UNUSABLE = Refused.define(
    "bus-log-unusable",
    "give this user read (and, for a verb, write) access to the data dir's events.jsonl, or "
    "use another data dir",
)


def corrupt(lineno: int, code: Code[CorruptLog], what: str) -> CorruptLog:
    """The refusal of line ``lineno`` (0: the file as a whole) with ``code``."""
    return code(f"{LOG_NAME} line {lineno}: {what}")


def _diagnose(line: bytes, lineno: int, exc: ValidationError) -> CorruptLog:
    import json

    try:
        # Decoded first: json.loads on bytes would strip a BOM that the event parser refused.
        value: Any = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return corrupt(lineno, BAD_JSON, "not valid JSON")
    except RecursionError:  # valid grammar, but no event is nested like that
        return corrupt(lineno, BAD_JSON, "nested too deeply to be an event")
    if not isinstance(value, dict):
        return corrupt(lineno, NOT_AN_OBJECT, "not a JSON object")
    kind = value.get("type")
    if kind is None:
        return corrupt(lineno, MISSING_TYPE, "event has no type")
    if kind not in EVENT_TYPES:
        return corrupt(lineno, UNKNOWN_TYPE, "unknown event type")
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    if kind == "work.handed-off" and "authorityTransferred" in where:
        return corrupt(lineno, HANDOFF_AUTHORITY, "a handoff transferred authority")
    return corrupt(lineno, SCHEMA_VIOLATION, f"{kind} violates its schema at {where}")


def parse_line(line: bytes, lineno: int) -> Event:
    """Parse one log line (without its LF) into an event, or raise :class:`CorruptLog`.

    The line must be the RFC 8785 form of the event it denotes: the fast comparison uses
    pydantic's serializer (fields are declared in canonical order); only when that differs
    is the authoritative ``rfc8785`` rendering consulted.
    """
    if not line.strip():
        raise corrupt(lineno, BLANK_LINE, "blank line")
    if len(line) > MAX_LINE_BYTES:
        raise corrupt(lineno, LINE_TOO_LONG, f"longer than {MAX_LINE_BYTES} bytes")
    try:
        # The adapter's core validator directly: this runs once per line of every replay.
        event: Event = _VALIDATE_JSON(line)
    except ValidationError as exc:
        raise _diagnose(line, lineno, exc) from None
    fast = event.__pydantic_serializer__.to_json(event, by_alias=True)
    if fast != line and canonical_bytes(event.to_json_value()) != line:
        raise corrupt(lineno, NOT_CANONICAL, "not in RFC 8785 canonical form")
    return event


def read_lines(f: BinaryIO) -> Iterator[bytes]:
    """The lines of ``f`` with their LF, none buffered beyond ``MAX_LINE_BYTES + 2`` bytes.

    A longer line comes back cut, without its LF, so :func:`iter_lines` refuses it as
    ``line-too-long`` instead of a reader holding a whole garbage file in memory.
    """
    while raw := f.readline(MAX_LINE_BYTES + 2):
        yield raw


def iter_lines(stream: Iterable[bytes], first_lineno: int = 1) -> Iterator[tuple[int, bytes]]:
    """Yield ``(lineno, line-without-LF)``; a last line without LF is ``torn-tail``, a piece
    cut by :func:`read_lines` is ``line-too-long``."""
    lineno = first_lineno - 1
    for raw in stream:
        lineno += 1
        if not raw.endswith(b"\n"):
            if len(raw) > MAX_LINE_BYTES + 1:
                raise corrupt(lineno, LINE_TOO_LONG, f"longer than {MAX_LINE_BYTES} bytes")
            raise corrupt(lineno, TORN_TAIL, "last line is not LF-terminated (torn write)")
        yield lineno, raw[:-1]


def fold(state: State, stream: Iterable[bytes], first_lineno: int = 1) -> None:
    """Parse and apply every line of ``stream`` to ``state`` (raises :class:`CorruptLog`)."""
    for lineno, line in iter_lines(stream, first_lineno):
        event = parse_line(line, lineno)
        try:
            apply(state, event)
        except ReplayError as exc:
            raise corrupt(lineno, exc.code, exc.message) from None


def open_log(path: Path) -> BinaryIO | None:
    """Open the log for reading; ``None`` when it does not exist.

    The log must be a regular file in the data dir itself: a symlink is not followed and a
    FIFO is opened non-blocking, so neither can hang a reader or redirect it elsewhere.

    Raises:
        CorruptLog: ``log-not-regular`` (a symlink, folder, FIFO, socket or device).
        Refused: ``bus-log-unusable`` (exit 2) when this user may not read it.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # ELOOP: a symlink; ENXIO: a socket (it cannot be opened at all).
        if exc.errno not in (errno.ELOOP, errno.ENXIO):
            raise LOG_UNUSABLE(f"cannot read {path} ({exc.strerror})") from None
        fd = -1
    if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd >= 0:
            os.close(fd)
        raise LOG_NOT_REGULAR(
            f"{path} is not a regular file (a symlink, folder or FIFO is never followed)"
        )
    return os.fdopen(fd, "rb")


class FixedPoint(StrictModel):
    """``factory.event-log-fixed-point/1`` (SPEC B-4): what the log's bytes were when
    measured — raw ``bytes``, LF-terminated ``events``, plain ``sha256`` hex."""

    schema_id: Literal["factory.event-log-fixed-point/1"] = Field(
        default=FIXED_POINT_FORMAT, alias="format"
    )
    path_role: Literal["data-dir/events.jsonl"] = Field(default=PATH_ROLE, alias="pathRole")
    bytes: int
    events: int
    sha256: str


def fixed_point(data_dir: Path) -> FixedPoint:
    """B-4 fixed point of ``D/events.jsonl``: raw ``bytes``, LF-terminated ``events``, ``sha256``.

    A missing log measures as zero bytes and zero events.

    Raises:
        CorruptLog: ``log-not-regular`` (see :func:`open_log`).
    """
    h = hashlib.sha256()
    size = lines = 0
    f = open_log(data_dir / LOG_NAME)
    with f if f is not None else contextlib.nullcontext():
        while f is not None and (chunk := f.read(CHUNK)):
            h.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    return FixedPoint(bytes=size, events=lines, sha256=h.hexdigest())

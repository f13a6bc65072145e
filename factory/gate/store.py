"""The gate's durable store: a small interface and its SQLite implementation (SPEC G).

One SQLite file (standard library ``sqlite3``; WAL journal, ``synchronous=FULL``) holds
every run: the scenario bytes it started with, its append-only history (one row per entry,
the head hash chain inside the rows), its evidence (exact bytes, digest, detached
signature), the evaluation records of accepted candidates, and content-addressed blobs
(provider output). Triggers refuse UPDATE and DELETE on all of them: history is appended,
never rewritten.

Acceptance is compare-and-swap (:meth:`GateStore.append`): inside one ``BEGIN IMMEDIATE``
transaction the request id is looked up first (same candidate → ``replayed``, another →
:class:`RequestConflict`, unless both record the same ask: an identical retry that lost
a race), then the head is compared with the candidate's base
(different → ``stale``), then the entry is inserted and committed. An error raised by
``COMMIT`` itself means the outcome is unknown (the commit may be durable while the answer
was lost): the store says ``unknown`` and leaves a marker beside the database file, and the
next load settles it by looking the request up — it never guesses.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from factory.documents.canonical import canonical_bytes, sha256_hex
from factory.documents.reading import read_own
from factory.errors import FactoryError
from factory.fsio import atomic_replace
from factory.gate.errors import (
    EVIDENCE_CONFLICT,
    REQUEST_CONFLICT,
    STORE_CORRUPT,
    STORE_FAILED,
    RequestConflict,
)
from factory.gate.evidence import Evidence, Signature, load
from factory.gate.state import Entry

SCHEMA_VERSION = "factory.gate-store/1"
Outcome = Literal["committed", "replayed", "stale", "unknown"]

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
    run TEXT PRIMARY KEY, scenario BLOB NOT NULL, format TEXT NOT NULL, spec_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
    run TEXT NOT NULL, seq INTEGER NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL,
    request TEXT, candidate TEXT, body BLOB NOT NULL, PRIMARY KEY(run, seq));
CREATE UNIQUE INDEX IF NOT EXISTS entries_request ON entries(run, request);
CREATE TABLE IF NOT EXISTS evaluations(
    run TEXT NOT NULL, digest TEXT NOT NULL, record BLOB NOT NULL, PRIMARY KEY(run, digest));
CREATE TABLE IF NOT EXISTS evidence(
    run TEXT NOT NULL, id TEXT NOT NULL, sha256 TEXT NOT NULL, signature TEXT,
    payload BLOB NOT NULL, PRIMARY KEY(run, id));
CREATE TABLE IF NOT EXISTS blobs(sha256 TEXT PRIMARY KEY, data BLOB NOT NULL);
"""
_APPEND_ONLY = ("runs", "entries", "evaluations", "evidence", "blobs")


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an acceptance attempt did. ``seq``/``head`` are the committed entry's (for
    ``committed`` and ``replayed``) or the current head's (for ``stale``)."""

    outcome: Outcome
    seq: int | None
    head: str | None


class GateStore(Protocol):
    """What the gate needs from a store (SQLite here; a server database could back it)."""

    def create_run(
        self, run: str, source: bytes, fmt: str, spec_hash: str, entry: Entry
    ) -> bool: ...
    def run_source(self, run: str) -> tuple[bytes, str, str] | None: ...
    def runs(self) -> list[str]: ...
    def entries(self, run: str) -> list[Entry]: ...
    def put_evidence(self, run: str, record: Evidence) -> bool: ...
    def evidence(self, run: str) -> list[Evidence]: ...
    def put_blob(self, data: bytes) -> str: ...
    def blob(self, sha256: str) -> bytes | None: ...
    def append(
        self, run: str, expected: str, entry: Entry, evaluation: bytes, digest: str
    ) -> AppendResult: ...
    def evaluation(self, run: str, digest: str) -> bytes | None: ...
    def in_doubt(self, run: str) -> list[dict[str, str]]: ...
    def settle(self, run: str, request: str) -> None: ...
    def close(self) -> None: ...


Connect = Callable[[str], sqlite3.Connection]


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)


class SqliteStore:
    """:class:`GateStore` over one SQLite file. ``connect`` is injectable for fault tests."""

    def __init__(self, path: Path, *, connect: Connect = _connect) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(os.fspath(path))
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=30000")
            self._db.execute("PRAGMA foreign_keys=ON")
            with self._tx():
                self._ddl()
        except sqlite3.DatabaseError as exc:
            raise STORE_FAILED(f"the gate store {path} cannot be opened ({exc})") from exc

    def _ddl(self) -> None:
        for statement in _DDL.split(";"):
            if statement.strip():
                self._db.execute(statement)
        for table in _APPEND_ONLY:
            for op in ("UPDATE", "DELETE"):
                self._db.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                    "BEGIN SELECT RAISE(ABORT, 'the gate store is append-only'); END"
                )
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta(key, value) VALUES('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise STORE_CORRUPT(f"the store's schema is {row[0]!r}, not {SCHEMA_VERSION!r}")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """One write transaction; a write SQLite cannot make (a full disk, an I/O error)
        rolls back and is ``StoreFailure`` (exit 4, nothing recorded), never a bug."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise STORE_FAILED(self._unwritten(exc)) from exc

    def _unwritten(self, exc: sqlite3.Error) -> str:
        return f"the gate store {self.path} could not be written ({exc}); nothing was recorded"

    def close(self) -> None:
        self._db.close()

    def create_run(self, run: str, source: bytes, fmt: str, spec_hash: str, entry: Entry) -> bool:
        """Create ``run`` with its start entry; False when it already exists (unchanged)."""
        with self._tx():
            if self._db.execute("SELECT 1 FROM runs WHERE run=?", (run,)).fetchone():
                return False
            self._db.execute("INSERT INTO runs VALUES(?,?,?,?)", (run, source, fmt, spec_hash))
            self._insert_entry(entry, None, None)
        return True

    def _insert_entry(self, entry: Entry, request: str | None, candidate: str | None) -> None:
        self._db.execute(
            "INSERT INTO entries(run, seq, prev, hash, request, candidate, body)"
            " VALUES(?,?,?,?,?,?,?)",
            (entry.run, entry.seq, entry.prev, entry.hash, request, candidate,
             canonical_bytes(entry.body)),
        )  # fmt: skip

    def run_source(self, run: str) -> tuple[bytes, str, str] | None:
        row = self._db.execute(
            "SELECT scenario, format, spec_hash FROM runs WHERE run=?", (run,)
        ).fetchone()
        return None if row is None else (bytes(row[0]), str(row[1]), str(row[2]))

    def runs(self) -> list[str]:
        """Every run id in the store, sorted."""
        return [str(r[0]) for r in self._db.execute("SELECT run FROM runs ORDER BY run")]

    def entries(self, run: str) -> list[Entry]:
        rows = self._db.execute(
            "SELECT seq, prev, hash, body FROM entries WHERE run=? ORDER BY seq", (run,)
        ).fetchall()
        out = []
        for seq, prev, digest, body in rows:
            try:
                parsed = read_own(bytes(body))
            except ValueError as exc:
                raise STORE_CORRUPT(f"run {run} entry {seq} does not parse") from exc
            out.append(Entry(run, int(seq), str(prev), parsed, str(digest)))
        return out

    def put_evidence(self, run: str, record: Evidence) -> bool:
        """Store a record; False when the same id already holds the same bytes (replay).

        Raises:
            EvidenceConflict: the id holds other bytes or another signature.
        """
        sig = None if record.signature is None else json.dumps(record.signature.to_json())
        with self._tx():
            row = self._db.execute(
                "SELECT sha256, signature FROM evidence WHERE run=? AND id=?", (run, record.id)
            ).fetchone()
            if row is not None:
                if row[0] == record.sha256 and row[1] == sig:
                    return False
                raise EVIDENCE_CONFLICT(
                    f"evidence id {record.id} already holds other bytes in run {run}"
                )
            self._db.execute(
                "INSERT INTO evidence VALUES(?,?,?,?,?)",
                (run, record.id, record.sha256, sig, record.payload),
            )
        return True

    def evidence(self, run: str) -> list[Evidence]:
        rows = self._db.execute(
            "SELECT id, sha256, signature, payload FROM evidence WHERE run=? ORDER BY id", (run,)
        ).fetchall()
        return [load(str(i), bytes(p), str(d), _signature(s)) for i, d, s, p in rows]

    def put_blob(self, data: bytes) -> str:
        digest = sha256_hex(data)
        with self._tx():
            self._db.execute("INSERT OR IGNORE INTO blobs VALUES(?,?)", (digest, data))
        return digest

    def blob(self, sha256: str) -> bytes | None:
        row = self._db.execute("SELECT data FROM blobs WHERE sha256=?", (sha256,)).fetchone()
        return None if row is None else bytes(row[0])

    def evaluation(self, run: str, digest: str) -> bytes | None:
        row = self._db.execute(
            "SELECT record FROM evaluations WHERE run=? AND digest=?", (run, digest)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def append(
        self, run: str, expected: str, entry: Entry, evaluation: bytes, digest: str
    ) -> AppendResult:
        """Compare-and-swap ``entry`` onto ``run`` (see the module docstring)."""
        request, candidate = str(entry.body["request"]), str(entry.body["candidate"])
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT seq, hash, candidate, body FROM entries WHERE run=? AND request=?",
                (run, request),
            ).fetchone()
            if row is not None:
                db.execute("ROLLBACK")
                if row[2] != candidate and not _same_request(bytes(row[3]), entry.body):
                    raise REQUEST_CONFLICT(
                        f"request {request} already accepted another candidate in run {run}"
                    )
                return AppendResult("replayed", int(row[0]), str(row[1]))
            head = db.execute(
                "SELECT seq, hash FROM entries WHERE run=? ORDER BY seq DESC LIMIT 1", (run,)
            ).fetchone()
            if head is None or head[1] != expected:
                db.execute("ROLLBACK")
                return AppendResult("stale", None if head is None else int(head[0]),
                                    None if head is None else str(head[1]))  # fmt: skip
            self._insert_entry(entry, request, candidate)
            db.execute("INSERT OR IGNORE INTO evaluations VALUES(?,?,?)", (run, digest, evaluation))
        except RequestConflict:
            raise
        except sqlite3.OperationalError as exc:  # a full disk: rolled back, nothing recorded
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise STORE_FAILED(self._unwritten(exc)) from exc
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error:
            self._mark_in_doubt(run, request, candidate)
            return AppendResult("unknown", entry.seq, entry.hash)
        return AppendResult("committed", entry.seq, entry.hash)

    def _doubt_dir(self) -> Path:
        return self.path.parent / f"{self.path.name}.in-doubt"

    def _mark_in_doubt(self, run: str, request: str, candidate: str) -> None:
        folder = self._doubt_dir()
        folder.mkdir(exist_ok=True)
        name = sha256_hex(f"{run}\0{request}".encode())
        body = {"run": run, "request": request, "candidate": candidate}
        atomic_replace(folder / f"{name}.json", canonical_bytes(body), mode=0o600)

    def in_doubt(self, run: str) -> list[dict[str, str]]:
        """Acceptances whose outcome was unknown when they were attempted."""
        folder = self._doubt_dir()
        if not folder.is_dir():
            return []
        out = []
        for marker in sorted(folder.glob("*.json")):
            with contextlib.suppress(ValueError, OSError):
                body = read_own(marker.read_bytes())
                if body.get("run") == run:
                    out.append({k: str(v) for k, v in body.items()})
        return out

    def settle(self, run: str, request: str) -> None:
        """Forget the marker of an acceptance the caller has now settled."""
        name = sha256_hex(f"{run}\0{request}".encode())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._doubt_dir() / f"{name}.json")


def same_ask(stored: Any, asked: Any) -> bool:
    """Whether a recorded ask and a new one are the same request: equal canonical bytes
    (``true`` is not ``1``); an acceptance that recorded no ask matches nothing."""
    if stored is None or asked is None:
        return False
    try:
        return canonical_bytes(stored) == canonical_bytes(asked)
    except FactoryError:
        return False


def _same_request(stored_body: bytes, body: Mapping[str, Any]) -> bool:
    """An identical retry that lost the race: another candidate (derived later, from
    another head) under the same request id and the same ask (``Gate.accept(asked=…)``)."""
    try:
        stored = read_own(stored_body)
    except ValueError:
        return False
    return isinstance(stored, dict) and same_ask(stored.get("asked"), body.get("asked"))


def _signature(text: str | None) -> Signature | None:
    if text is None:
        return None
    body = json.loads(text)
    return Signature(str(body["key_id"]), base64.b64decode(body["ed25519"]))

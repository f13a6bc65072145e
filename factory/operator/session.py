"""One authorization, from the reserved receipt to its terminal record (SPEC O-3).

:func:`operate` is the same for ``operator run`` and ``operator publish``; a :class:`Flow`
supplies what differs (how to observe and build the intent, the screen, the grant scope,
the action). The order is fixed:

1. reserve ``--out`` (``O_EXCL``) — from here every return path rewrites it;
   then the flow's own admission runs (stage ``gate``: ``factory publish`` runs the
   decision gate there; a gate that holds ends the command ``held``, exit 3);
2. observe and build the intent (stage ``observe`` / ``intent``);
3. show every field, then the operator types the full intent revision (``confirm``);
4. the passphrase unlocks the key (``unlock``);
5. a grant is signed in memory, the world is observed again and must yield the *same*
   intent revision (else the flow's stale code), and the grant is consumed once
   (``grant``);
6. the action runs; from here a failure is ``execution-failed`` (exit 4), never a refusal.

Any typed error before step 6 is ``refused`` with ``{stage, code}`` (exit 2); Ctrl-C at a
prompt is a refusal too (``prompt-cancelled``), elsewhere ``interrupted`` (exit 130). A
hang-up (:class:`~factory.operator.tty.HungUp`) is ``interrupted`` (130) everywhere, at a
prompt too: nothing was answered, and before the grant nothing was spent.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from factory import __version__
from factory.display import inert
from factory.documents.canonical import sha256_hex
from factory.errors import Code, ExitCode, FactoryError, Refused
from factory.fsio import atomic_replace, reserve
from factory.operator import dialog
from factory.operator.grant import (
    Clock,
    Expected,
    SignedGrant,
    sign,
    system_clock,
    utc_text,
)
from factory.operator.intent import IntentRefused, PublishIntent, RunIntent
from factory.operator.keys import public_pem, unlock
from factory.operator.ledger import consume, entry_name
from factory.operator.receipt import (
    RESIDUALS,
    AgentRunRef,
    Command,
    ErrorRecord,
    GateRecord,
    GrantRecord,
    LedgerRef,
    OperatorReceipt,
    PublishResult,
    Refusal,
    Stage,
    Status,
    Timings,
    receipt_bytes,
)
from factory.operator.tty import HungUp, Terminal

Intent = RunIntent | PublishIntent


class _Stopped(Exception):
    """A typed error before the grant was spent, with the stage it stopped at."""

    def __init__(self, stage: Stage, error: FactoryError) -> None:
        super().__init__(error.code)
        self.stage = stage
        self.error = error


class Held(Exception):
    """The flow's admission found a verdict that stops it (the decision gate held the
    candidate): not an error, an outcome — status ``held``, exit 3, nothing spent."""

    def __init__(self, explanation: str) -> None:
        super().__init__(explanation)
        self.explanation = explanation


GATE_HELD: str = "gate-held"  # the refusal code of a held receipt (an outcome, not an error)


class StaleIntent(Refused):
    """The world changed between what the operator saw and the grant (exit 2)."""


_REVIEW = "nothing was spent; review the new intent and authorize again"
SNAPSHOT_STALE = StaleIntent.define("snapshot-stale", _REVIEW)
INTENT_STALE = StaleIntent.define("intent-stale", _REVIEW)


class OutRefused(Refused):
    """``--out`` cannot be reserved where it was asked for (exit 2)."""


OUT_INSIDE_WORKTREE = OutRefused.define("out-inside-worktree", "put --out outside the worktree")
OUTPUT_FOLDER_MISSING = OutRefused.define(
    "output-folder-missing", "create the folder of --out first"
)


@dataclass
class Outcome:
    """What the action reports back: its status and what to record."""

    status: Status
    error: ErrorRecord | None = None
    agent_run: AgentRunRef | None = None
    publication: PublishResult | None = None


class Flow(Protocol):
    """The command-specific half of an authorization."""

    command: Command
    repository: str
    stale_code: Code[StaleIntent]
    gate_record: GateRecord | None

    def admit(self) -> None:
        """Runs right after the reservation (stage ``gate``); may raise :class:`Held`."""

    def observe(self) -> Intent: ...

    def screen(self, intent: Intent) -> list[str]: ...

    def execute(self, intent: Intent, grant: SignedGrant) -> Outcome: ...


@dataclass(frozen=True)
class Authority:
    """The key material and ledger a grant is made and spent with."""

    private_pem: bytes
    public_key: Ed25519PublicKey
    ledger: Path
    ttl_s: int
    clock: Clock = system_clock


@dataclass
class Result:
    """The exit code, the receipt's exact bytes, and a diagnostic line (or ``None``)."""

    exit_code: int
    data: bytes
    diagnostic: str | None


@dataclass
class Recorder:
    """Keeps the receipt fields as the flow advances and writes the records."""

    out: Path
    command: Command
    repository: str
    started_at: str
    intent: Intent | None = None
    grant: GrantRecord | None = None
    gate: Callable[[], GateRecord | None] = lambda: None

    def receipt(self, status: Status, exit_code: int | None, **kw: object) -> OperatorReceipt:
        return OperatorReceipt(
            status=status,
            exit_code=exit_code,
            command=self.command,
            factory_version=__version__,
            repository=self.repository,
            intent=self.intent,
            refusal=kw.get("refusal"),  # type: ignore[arg-type]
            error=kw.get("error"),  # type: ignore[arg-type]
            grant=self.grant,
            agent_run=kw.get("agent_run"),  # type: ignore[arg-type]
            publication=kw.get("publication"),  # type: ignore[arg-type]
            residuals=list(RESIDUALS),
            gate=self.gate(),
            timings=Timings(
                started_at=self.started_at,
                ended_at=None if status == "reserved" else utc_text(_dt.datetime.now(_dt.UTC)),
            ),
        ).closed()

    def reserve(self) -> None:
        reserve(self.out, receipt_bytes(self.receipt("reserved", None)), mode=0o644)

    def finish(self, receipt: OperatorReceipt) -> bytes:
        data = receipt_bytes(receipt)
        atomic_replace(self.out, data, mode=0o644)
        return data


_EXIT: dict[str, int] = {
    "executed": int(ExitCode.OK),
    "execution-failed": int(ExitCode.FAILURE),
    "interrupted": int(ExitCode.INTERRUPTED),
}


def _authorize(flow: Flow, terminal: Terminal, authority: Authority, rec: Recorder) -> Stage:
    """Steps 2–5; returns only once the grant is spent (sets ``rec.grant``).

    Raises:
        _Stopped: a typed error, with the stage it happened at.
    """
    stage: Stage = "observe"
    try:
        intent = flow.observe()
        rec.intent = intent
        stage = "confirm"
        dialog.show(terminal, flow.screen(intent))
        dialog.confirm(terminal, intent.intent_revision)
        stage = "unlock"
        passphrase = dialog.ask_passphrase(terminal)
        key = unlock(authority.private_pem, passphrase, authority.public_key)
        del passphrase
        stage = "grant"
        expected = Expected.of(intent)
        signed = sign(key, expected, ttl_s=authority.ttl_s, clock=authority.clock)
        del key
        terminal.write("Authorized. Re-reading before the grant is spent...\n")
        again = flow.observe()
        if again.intent_revision != intent.intent_revision:
            raise flow.stale_code(
                "what was observed changed after it was shown (a new intent revision)"
            )
        spent, _entry, path = consume(
            signed.to_json_value(),
            expected,
            authority.public_key,
            authority.ledger,
            authority.clock,
        )
    except FactoryError as exc:
        if stage == "observe" and isinstance(exc, IntentRefused):
            stage = "intent"
        raise _Stopped(stage, exc) from exc
    rec.grant = GrantRecord(
        signed=spent,
        public_key=public_pem(authority.public_key),
        ledger=LedgerRef(
            folder=os.fspath(authority.ledger),
            entry=entry_name(spent.grant.grant_id),
            sha256=sha256_hex(path.read_bytes()),
        ),
    )
    return stage


#: Admission after the reservation: opens the terminal and loads the key and ledger.
Prepare = Callable[[], tuple[Terminal, Authority]]


def operate(out: Path, flow: Flow, prepare: Prepare) -> Result:
    """Run one authorization end to end and leave its terminal receipt at ``out``.

    ``prepare`` runs right after the reservation (stage ``admission``): the terminal check,
    the key files and the ledger folder are refused *with* a receipt.

    Raises:
        OutputExists: ``out`` is taken (nothing was written).
        BaseException: an internal error, after a terminal receipt (exit 1) was written.
    """
    rec = Recorder(out, flow.command, flow.repository, utc_text(_dt.datetime.now(_dt.UTC)))
    rec.gate = lambda: flow.gate_record
    rec.reserve()
    try:
        return _run(flow, prepare, rec)
    except KeyboardInterrupt as exc:
        # A signal that landed while another ending was being written (a hang-up right
        # after the closed terminal's end of input): the receipt must not stay 'reserved'.
        return _interrupted(rec, exc)
    finally:
        close = getattr(flow, "close", None)  # a flow's lock (operator publish)
        if close is not None:
            close()


def _interrupted(rec: Recorder, exc: KeyboardInterrupt) -> Result:
    data = rec.finish(rec.receipt("interrupted", int(ExitCode.INTERRUPTED)))
    said = "factory: interrupted" + (": the terminal hung up" if isinstance(exc, HungUp) else "")
    return Result(int(ExitCode.INTERRUPTED), data, said)


def _run(flow: Flow, prepare: Prepare, rec: Recorder) -> Result:
    """:func:`operate` after the reservation: every way out writes the terminal receipt."""
    try:
        try:
            flow.admit()
        except FactoryError as exc:
            raise _Stopped("gate", exc) from exc
        try:
            terminal, authority = prepare()
        except FactoryError as exc:
            raise _Stopped("admission", exc) from exc
        _authorize(flow, terminal, authority, rec)
        assert rec.intent is not None and rec.grant is not None
        outcome = flow.execute(rec.intent, rec.grant.signed)
    except KeyboardInterrupt as exc:
        return _interrupted(rec, exc)
    except Held as held:
        refusal = Refusal(stage="gate", code=GATE_HELD)
        data = rec.finish(rec.receipt("held", int(ExitCode.REJECTED), refusal=refusal))
        return Result(int(ExitCode.REJECTED), data, held.explanation)
    except _Stopped as stop:
        refusal = Refusal(stage=stop.stage, code=stop.error.code)
        # A gate condition that failed (a provider crash, a forged witness) is a typed
        # failure (4), though nothing was spent; every other refusal here is a 2.
        code = int(stop.error.exit_code) if stop.stage == "gate" else int(ExitCode.USAGE)
        data = rec.finish(rec.receipt("refused", code, refusal=refusal))
        return Result(code, data, stop.error.shown())
    except FactoryError as exc:
        line = exc.shown()
        error = ErrorRecord(code=exc.code, message=exc.message)
        data = rec.finish(rec.receipt("execution-failed", int(ExitCode.FAILURE), error=error))
        return Result(int(ExitCode.FAILURE), data, line)
    except BaseException:
        internal = ErrorRecord(code="internal", message="internal error; see the crash log")
        if rec.grant is None:
            refusal = Refusal(stage="admission", code="internal")
            rec.finish(rec.receipt("refused", int(ExitCode.INTERNAL), refusal=refusal))
        else:
            rec.finish(rec.receipt("execution-failed", int(ExitCode.INTERNAL), error=internal))
        raise
    receipt = rec.receipt(
        outcome.status,
        _EXIT[outcome.status],
        error=outcome.error,
        agent_run=outcome.agent_run,
        publication=outcome.publication,
    )
    said = None
    if outcome.error is not None:
        said = inert(f"factory: {outcome.error.code}: {outcome.error.message}")
    return Result(_EXIT[outcome.status], rec.finish(receipt), said)

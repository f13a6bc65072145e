"""The coordination tracer behind ``factory smoke`` (SPEC B-6).

Admission refuses (exit 2, nothing touched) an existing report, a report inside the data
dir, a missing or non-regular artifact (a symlink counts as non-regular), a missing report
folder and an existing data dir. Then, in order: reserve the report (``O_EXCL``), claim the
data dir (non-recursive ``mkdir``: of two concurrent runs exactly one wins; the loser's
reserved report gets a terminal ``failed`` record, ``data-dir-claimed``, and exit 4: after the
reservation nothing is "before any effect"), spawn ``factory bus serve`` at once (its
start-up overlaps the tracer's own imports; :mod:`factory.bus.spawn`, which also guarantees
that no server process outlives the run, however it ends), drive it through the SDK's
``ClientSession`` (:mod:`factory.bus.client`), measure the fixed point, verify with
evidence claimed, re-measure, and fail (exit 4) unless the evidence gate passed and the
fixed point did not move. Every path after the reservation leaves a terminal record;
stdout gets exactly the bytes persisted.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from factory.errors import (
    ARGUMENT_NOT_UTF8,
    INTERNAL,
    INTERRUPTED,
    ExitCode,
    FactoryError,
    Failure,
    Refused,
    exit_code_for,
)
from factory.filehash import digest_file
from factory.fsio import (
    OUTPUT_EXISTS,
    OutputExists,
    atomic_replace,
    claim_dir,
    physically_inside,
    reserve,
)

if TYPE_CHECKING:  # the models load after the server was spawned (issue 25)
    from factory.bus.logfile import FixedPoint
    from factory.bus.smoke_report import Artifact, SmokeReport, Trace
    from factory.bus.spawn import ServerChild
    from factory.bus.verify import BusVerification

DEFAULT_TASK: Final = "Review the supplied artifact"
MAX_TASK_CHARS: Final = 16_384  # the bus's message text limit


class SmokeRefused(Refused):
    """A smoke precondition failed before any effect (exit 2)."""


_define = SmokeRefused.define
ARTIFACT_MISSING = _define("artifact-missing", "pass an existing regular file as --artifact")
ARTIFACT_NOT_REGULAR = _define("artifact-not-regular", "pass a regular file as --artifact")
BAD_TASK = _define(
    "bad-task", f"pass a non-blank --task of at most {MAX_TASK_CHARS} characters (60 KiB as JSON)"
)
REPORT_INSIDE_DATA_DIR = _define("report-inside-data-dir", "write the report elsewhere")
DATA_DIR_EXISTS = _define("data-dir-exists", "each smoke run claims a new --data-dir")
DATA_DIR_PARENT_MISSING = _define(
    "data-dir-parent-missing", "create the folder that will hold the data dir first"
)
REPORT_FOLDER_MISSING = _define("report-folder-missing", "create the report's folder first")
# After the report is reserved nothing is "before any effect": losing the data dir to a
# concurrent run is a failure (4) with a terminal record, not a refusal (errors.py).
DATA_DIR_CLAIMED = Failure.define(
    "data-dir-claimed", "each smoke run claims a new --data-dir: pass another one"
)
EVIDENCE_GATE_FAILED = Failure.define(
    "evidence-gate-failed", "keep the data dir and report as evidence; see design/bus.md"
)


@dataclass(frozen=True, slots=True)
class SmokeRequest:
    data_dir: Path
    artifact: Path
    out: Path
    task: str = DEFAULT_TASK


def _artifact(path: Path) -> dict[str, Any]:
    try:
        st = os.lstat(path)
    except OSError:
        raise ARTIFACT_MISSING(f"artifact {path} does not exist") from None
    if not stat.S_ISREG(st.st_mode):
        raise ARTIFACT_NOT_REGULAR(
            f"artifact {path} is not a regular file (symlinks, folders, FIFOs are refused)"
        )
    try:
        size, sha = digest_file(path)
    except OSError:  # swapped for a symlink or a non-regular entry since the lstat
        raise ARTIFACT_NOT_REGULAR(f"artifact {path} is no longer a regular file") from None
    return {"path": os.fspath(path), "bytes": size, "sha256": sha}


def _check_text(req: SmokeRequest) -> None:
    from factory.bus.limits import text_fits_one_line

    for flag, value in (
        ("--data-dir", os.fspath(req.data_dir)),
        ("--artifact", os.fspath(req.artifact)),
        ("--out", os.fspath(req.out)),
        ("--task", req.task),
    ):
        try:
            value.encode("utf-8")  # argv bytes that are not UTF-8 arrive as lone surrogates
        except UnicodeEncodeError:
            raise ARGUMENT_NOT_UTF8(f"{flag} is not valid UTF-8") from None
    try:
        ok = len(req.task) <= MAX_TASK_CHARS and bool(req.task.strip())
        text_fits_one_line(req.task)
    except ValueError:
        ok = False
    if not ok:
        raise BAD_TASK("--task is blank or too long")


def admit(req: SmokeRequest) -> dict[str, Any]:
    """Refuse a bad request before any effect; returns the artifact record's JSON value
    (the model, :class:`~factory.bus.smoke_report.Artifact`, is built after the spawn)."""
    _check_text(req)
    if os.path.lexists(req.out):
        raise OUTPUT_EXISTS(f"report {req.out} already exists")
    out_abs = Path(os.path.abspath(req.out))
    data_abs = Path(os.path.abspath(req.data_dir))
    if (
        data_abs == out_abs
        or data_abs in out_abs.parents
        or (os.path.isdir(req.data_dir) and physically_inside(req.out, req.data_dir))
    ):
        raise REPORT_INSIDE_DATA_DIR(f"report {req.out} is inside the data dir {req.data_dir}")
    artifact = _artifact(req.artifact)
    if os.path.lexists(req.data_dir):
        raise DATA_DIR_EXISTS(f"data dir {req.data_dir} already exists")
    if not os.path.isdir(data_abs.parent):
        raise DATA_DIR_PARENT_MISSING(
            f"the folder that would hold data dir {req.data_dir} ({data_abs.parent}) does not "
            "exist or is not a folder"
        )
    if not os.path.isdir(out_abs.parent):
        raise REPORT_FOLDER_MISSING(
            f"report folder {out_abs.parent} does not exist or is not a folder"
        )
    return artifact


def build_report(
    req: SmokeRequest,
    artifact: Artifact,
    trace: Trace,
    before: FixedPoint,
    after: FixedPoint,
    verification: BusVerification,
) -> SmokeReport:
    """The completed ``factory.smoke-report/1``: ``ok`` unless :func:`judge` found a problem."""
    from factory.bus.smoke_report import SmokeReport, VerificationSummary, judge
    from factory.models import ErrorRecord

    problems = judge(before, after, verification, trace)
    error = None
    if problems:
        message = f"{'; '.join(problems)}; {EVIDENCE_GATE_FAILED.next_step}"
        error = ErrorRecord(code=EVIDENCE_GATE_FAILED.name, message=message)
    return SmokeReport(
        data_dir=os.fspath(req.data_dir),
        artifact=artifact,
        task=req.task,
        ok=not problems,
        status="failed" if problems else "completed",
        actors=trace.actors,
        messages=trace.messages,
        acknowledgements=trace.acknowledgements,
        handoff=trace.handoff,
        correlation_id=trace.correlation_id,
        evidence_log=before,
        verification=VerificationSummary(
            ok=verification.ok,
            evidence_ok=verification.evidence_ok,
            evidence_gates_result=verification.evidence_gates_result,
        ),
        tool_surface=trace.tool_surface,
        error=error,
    )


def run_smoke(
    req: SmokeRequest, *, transport: str = "prespawned", backend: str = "asyncio"
) -> tuple[int, bytes]:
    """Run the tracer; returns ``(exit code, report bytes)`` (the bytes also persisted).

    Raises:
        SmokeRefused: admission refused; nothing was touched.
    """
    from factory.bus.smoke_reserve import reservation_bytes

    facts = admit(req)
    reserve(req.out, reservation_bytes(os.fspath(req.data_dir), facts, req.task))
    owns_dir = False
    server: ServerChild | None = None
    try:
        try:
            claim_dir(req.data_dir)
        except OutputExists:
            lost = DATA_DIR_CLAIMED(f"data dir {req.data_dir} was claimed by another run first")
            return _terminal(req, _artifact_model(facts), "failed", lost, owns_dir=False)
        owns_dir = True
        if transport == "prespawned":  # at once: its start-up overlaps everything below
            from factory.bus.spawn import spawn_server

            server = spawn_server(req.data_dir)
        return _trace_and_report(req, _artifact_model(facts), transport, backend, server)
    except BaseException as exc:
        _stop(server)
        code, data = _terminal(req, _artifact_model(facts), "failed", exc, owns_dir=owns_dir)
        if isinstance(exc, FactoryError | KeyboardInterrupt):
            return code, data  # exit 4 or 130; stdout still gets the persisted record
        raise
    finally:
        _stop(server)


def _artifact_model(facts: dict[str, Any]) -> Artifact:
    from factory.bus.smoke_report import Artifact

    return Artifact(**facts)


def _stop(server: ServerChild | None) -> None:
    """Stop the server (idempotent); an interrupt meanwhile still leaves its group killed."""
    if server is not None:
        with contextlib.suppress(KeyboardInterrupt):
            server.stop()


def _trace_and_report(
    req: SmokeRequest,
    artifact: Artifact,
    transport: str,
    backend: str,
    server: ServerChild | None,
) -> tuple[int, bytes]:
    from factory.bus.client import run_trace

    trace = run_trace(
        req.data_dir,
        task=req.task,
        artifact=artifact,
        transport=transport,
        backend=backend,
        server=server,
    )
    _stop(server)  # run_trace stopped it; the fixed point is measured on a stopped server
    from factory.bus.log import fixed_point
    from factory.bus.verify import verify

    before = fixed_point(req.data_dir)
    verification = verify(req.data_dir, as_evidence=True)
    after = fixed_point(req.data_dir)
    report = build_report(req, artifact, trace, before, after, verification)
    data = report.data()
    atomic_replace(req.out, data)
    return (int(ExitCode.OK) if report.ok else int(ExitCode.FAILURE)), data


def _terminal(
    req: SmokeRequest, artifact: Artifact, status: str, exc: BaseException, *, owns_dir: bool
) -> tuple[int, bytes]:
    from factory.bus.log import fixed_point
    from factory.bus.smoke_report import SmokeTerminal
    from factory.models import ErrorRecord

    if isinstance(exc, FactoryError):
        error = ErrorRecord(code=exc.code, message=exc.message)
    elif isinstance(exc, KeyboardInterrupt):
        error = ErrorRecord(code=INTERRUPTED.name, message="interrupted before completion")
    else:
        error = ErrorRecord(code=INTERNAL.name, message=type(exc).__name__)
    report = SmokeTerminal(
        ok=False,
        data_dir=os.fspath(req.data_dir),
        artifact=artifact,
        task=req.task,
        status="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
        evidence_log=fixed_point(req.data_dir) if owns_dir else None,
        error=error,
    )
    data = report.data()
    atomic_replace(req.out, data)
    return int(exit_code_for(exc)), data

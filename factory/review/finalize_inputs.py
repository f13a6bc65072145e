"""The inputs of ``factory review finalize``: its flags (:class:`FinalizeArgs`) and every
file they name, read within limits and parsed strictly (:func:`parse_args`) before
anything is planned, so malformed input changes nothing and consumes nothing."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from factory.documents.canonical import sha256_hex, tagged_sha256
from factory.review.documents import EVIDENCE_TAG
from factory.review.errors import VALUE_INVALID
from factory.review.judgement import RefuterInput, ReviewerInput, ValidatorInput, parse_input
from factory.review.names import LensName
from factory.review.state import FinalEvidence

EVIDENCE_LIMIT = 64 << 20


@dataclass(frozen=True)
class FinalizeArgs:
    """The flags of ``factory review finalize`` (files not read yet)."""

    lineage: str | None = None
    results: tuple[Path, ...] = ()
    refuter: Path | None = None
    validation: Path | None = None
    evidence: str | None = None  # a path, or "-" for stdin
    evidence_run: tuple[str, ...] | None = None
    correction_lines: int | None = None
    failed: bool = False
    replay: Path | None = None


@dataclass
class Inputs:
    """Parsed inputs: malformed ones never get this far."""

    results: list[tuple[bytes, ReviewerInput]]
    refuter: RefuterInput | None
    validation: ValidatorInput | None
    evidence: FinalEvidence | None
    evidence_bytes: bytes
    replay: tuple[LensName, bytes, ReviewerInput, str] | None


def _read(path: Path, what: str, limit: int) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise VALUE_INVALID(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise VALUE_INVALID(f"{what} {path} is larger than {limit} bytes")
    return data


def parse_args(args: FinalizeArgs) -> Inputs:
    """Read and strictly parse every input file (nothing is written).

    Raises:
        ReviewInputInvalid: the first malformed input.
    """
    results = []
    for i, path in enumerate(args.results, 1):
        raw = _read(path, f"--result #{i}", 1 << 20)
        results.append((raw, parse_input(ReviewerInput, raw, what=f"--result #{i} ({path.name})")))
    refuter = None
    if args.refuter is not None:
        refuter = parse_input(
            RefuterInput, _read(args.refuter, "--refuter", 1 << 20), what="--refuter"
        )
    validation = None
    if args.validation is not None:
        data = _read(args.validation, "--validation", 1 << 20)
        validation = parse_input(ValidatorInput, data, what="--validation")
    evidence, data = None, b""
    if args.evidence is not None:
        if args.evidence == "-":
            data = sys.stdin.buffer.read(EVIDENCE_LIMIT + 1) if sys.stdin else b""
            source = "stdin"
        else:
            data, source = _read(Path(args.evidence), "--evidence", EVIDENCE_LIMIT), "file"
        if not data:
            raise VALUE_INVALID("final evidence is empty; it must be non-empty bytes")
        if len(data) > EVIDENCE_LIMIT:
            raise VALUE_INVALID(f"final evidence is larger than {EVIDENCE_LIMIT} bytes")
        evidence = FinalEvidence(
            evidence_hash=tagged_sha256(EVIDENCE_TAG, data),
            sha256=sha256_hex(data),
            bytes=len(data),
            source=source,  # type: ignore[arg-type]
            run=None,
            declared_failed=args.failed,
        )
    replay = None
    if args.replay is not None:
        from factory.review.incident import load_preserved  # only --replay-preserved

        doc, payload = load_preserved(args.replay)
        reviewer = parse_input(ReviewerInput, payload, what="the preserved payload")
        replay = (doc.lens, payload, reviewer, doc.lineage_id)
    return Inputs(results, refuter, validation, evidence, data, replay)

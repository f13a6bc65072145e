"""``factory gate evaluate [--accept]``: derive a candidate at an instant, accept it onto the
head by compare-and-swap, and replay an identical retry of an acceptance from what was
committed (nothing is evaluated, submitted or acquired again)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from factory.cli.framework import say
from factory.cli.gate_io import load_run, open_gate, parse_instant_flag, print_json, read_file

if TYPE_CHECKING:
    from factory.gate.service import Ask, Committed, Gate, LoadedRun


def run_evaluate(args: argparse.Namespace) -> int:
    import functools

    import trio

    from factory.documents.canonical import sha256_hex
    from factory.gate.acquire import acquire
    from factory.gate.evidence import MAX_EVIDENCE_BYTES

    _check_request(args)
    now = parse_instant_flag(args.now, "--now")
    payloads = [read_file(path, f"--submit {path}", MAX_EVIDENCE_BYTES) for path in args.submit]
    gate = open_gate(args)
    run = load_run(gate, args.run)
    asked = _asked(args, payloads)
    prior = None if asked is None else gate.prior(run, args.request, asked)
    if prior is not None:  # an identical retry: before anything is submitted or acquired
        return _replay(gate, prior, args.trace)
    for payload in payloads:
        gate.submit(run, f"sub:{sha256_hex(payload)[:24]}", payload)
    if not args.no_acquire and not run.state.scenario_completed:
        trio.run(functools.partial(acquire, gate, run, progress=lambda line: say(f"gate: {line}")))
    candidate = gate.derive(run, now=now, opens=list(args.open))
    out = _document(candidate.record, candidate.candidate, candidate.digest, args.trace)
    code = _verdict_code(candidate.record, run.state.scenario_completed)
    if args.accept:
        result = gate.accept(run, candidate, args.request, asked=asked)
        if result.outcome == "replayed" and result.run is not None:
            return _replay(gate, gate.committed(result.run, result.request), args.trace)
        _accepted(gate, out, result.outcome, result.seq, result.head, result.request, result.run)
        code = _accept_code(result.outcome, code)
    print_json(out)
    return code


def _check_request(args: argparse.Namespace) -> None:
    from factory.gate.errors import PARAMS_INVALID
    from factory.gate.scenario import ID

    if args.request is not None and not args.accept:
        raise PARAMS_INVALID("--request names an acceptance; give it with --accept")
    if args.request is not None and not ID.fullmatch(args.request):
        raise PARAMS_INVALID("--request: a request id is 1-128 letters, digits, '_', '.', '-'")


def _asked(args: argparse.Namespace, payloads: list[bytes]) -> Ask | None:
    """The ask of an acceptance under ``--request`` (its identity for a retry), else None."""
    from factory.documents.canonical import sha256_hex
    from factory.gate.service import Ask

    if args.request is None:
        return None
    submitted = [sha256_hex(payload) for payload in payloads]
    return Ask.of(submitted=submitted, opens=args.open, acquire=not args.no_acquire)


def _document(
    record: dict[str, Any], candidate: str, evaluation: str, trace: bool
) -> dict[str, Any]:
    out = _summary(record)
    out.update(candidate=candidate, evaluation=evaluation)
    if trace:
        out["trace"] = record
    return out


def _accepted(
    gate: Gate,
    out: dict[str, Any],
    outcome: str,
    seq: int | None,
    head: str | None,
    request: str,
    run: LoadedRun | None,
) -> None:
    out["accepted"] = {"outcome": outcome, "seq": seq, "head": head, "request": request}
    if run is not None:
        out["status"] = gate.status(run)


def _replay(gate: Gate, prior: Committed, trace: bool) -> int:
    """Print what the first acceptance of this request printed, and exit as it did: the
    document is rebuilt from the committed entry, its stored evaluation and the run as it
    stood right after it; nothing is evaluated, submitted, acquired or written."""
    from factory.display import inert

    entry, record = prior.entry, prior.record
    request = str(entry.body["request"])
    say(inert(f"factory: request {request} was accepted at seq {entry.seq} with the same "
              "ask; replaying that result (nothing new evaluated or stored)"))  # fmt: skip
    out = _document(record, str(entry.body["candidate"]), str(entry.body["evaluation"]), trace)
    _accepted(gate, out, "committed", entry.seq, entry.hash, request, prior.run)
    print_json(out)
    return _verdict_code(record, bool(record["run_completed_before"]))


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    failures = [
        {"condition": c["condition"], **f} for c in record["conditions"] for f in c["failures"]
    ]
    return {
        "schema": "factory.gate-evaluation-summary/1",
        "run": record["run"],
        "base": record["base"],
        "now": record["now"],
        "delta": record["delta"],
        "stages": {s["stage"]: s["after"] for s in record["stages"]},
        "conditions": {
            c["condition"]: {"resolution": c["resolution"], "result": c["result"]}
            for c in record["conditions"]
        },
        "failures": failures,
    }


def _verdict_code(record: dict[str, Any], already: bool) -> int:
    from factory.errors import ExitCode

    if any(c["failures"] for c in record["conditions"]):
        return int(ExitCode.FAILURE)
    if already or record["delta"]["scenario_complete"]:
        return int(ExitCode.OK)
    return int(ExitCode.REJECTED)


def _accept_code(outcome: str, code: int) -> int:
    from factory.errors import ExitCode
    from factory.gate.errors import COMMIT_OUTCOME_UNKNOWN, STALE

    if outcome == "stale":
        say(STALE("the head moved since this candidate was derived").diagnostics())
        return int(ExitCode.FAILURE)
    if outcome == "unknown":
        say(COMMIT_OUTCOME_UNKNOWN("the store may or may not have committed").diagnostics())
        return int(ExitCode.FAILURE)
    return code

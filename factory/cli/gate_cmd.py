"""``factory gate start | submit | evaluate | status | export | verify | scenario`` (SPEC G).

Thin: parse flags, call :mod:`factory.gate.service` (and ``acquire``, ``runpack``,
``verify``), print one JSON object on stdout.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factory.cli.framework import emit_stdout, say
from factory.cli.gate_evaluate import run_evaluate
from factory.cli.gate_io import load_run, open_gate, parse_instant_flag, print_json, read_file

if TYPE_CHECKING:
    from factory.gate.scenario import Scenario

HELP = """\
A decision gate: typed conditions over admitted evidence, three-valued requirements, a
stage graph, pure evaluation and compare-and-swap acceptance, with exports an independent
verifier replays. Runs live in one SQLite file (--store, default STATE/gate.sqlite3).
"""

EVALUATE_HELP = """\
Acquire evidence for every condition with a binding, add the --submit files, evaluate
the run at its head (pure; --now fixes the time) and print the candidate. With --accept the
candidate is compared-and-swapped onto the head.

With --accept --request ID, an identical retry (same run, --submit files, --open stages and
acquisition; --now and --trace aside) of a request already accepted prints the committed
result again and exits as it did, storing nothing; other content under the same ID is
refused (gate-request-conflict).

Exit codes: 0 the run is complete (after this candidate); 3 held (some obligation is false
or unknown); 4 a condition failed operationally or in integrity, the candidate was stale,
or the commit outcome is unknown (the next command on the run settles it); 2 bad input.
"""

VERIFY_HELP = """\
Re-hash every file of a runpack and replay every accepted evaluation with the pure
evaluator. Reports four separate properties: record_integrity, source_authenticity,
freshness, replay_agreement. Exit 0 when none fails, 4 otherwise.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("gate", help="decision gate runs (start, evaluate, accept, verify)",
                       description=HELP)  # fmt: skip
    gsub = p.add_subparsers(title="gate commands", metavar="COMMAND", parser_class=type(p))
    start = gsub.add_parser("start", help="start a run of a scenario", description=HELP)
    start.add_argument("--scenario", required=True, help="a .toml/.json file or a built-in name")
    start.add_argument("--run", required=True, help="the new run's id")
    start.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="a run parameter the scenario declares (repeatable)")  # fmt: skip
    _store(start)
    start.set_defaults(handler=run_start)
    submit = gsub.add_parser(
        "submit",
        help="submit one evidence file",
        description="Admit a factory.gate-observation/1 file as evidence.",
    )
    submit.add_argument("--run", required=True, help="the run id")
    submit.add_argument("--id", required=True, help="the evidence id (idempotency key)")
    submit.add_argument("file", metavar="FILE")
    submit.add_argument(
        "--signature", help="file holding a base64 Ed25519 signature over the bytes"
    )
    submit.add_argument("--key-id", help="the scenario key id the signature is by")
    _store(submit)
    submit.set_defaults(handler=run_submit)
    ev = gsub.add_parser(
        "evaluate", help="evaluate (and accept) a candidate", description=EVALUATE_HELP
    )
    ev.add_argument("--run", required=True, help="the run id")
    ev.add_argument("--submit", action="append", default=[], metavar="FILE",
                    help="submit this evidence file first (id: sub:<sha256 prefix>)")  # fmt: skip
    ev.add_argument("--open", action="append", default=[], metavar="STAGE",
                    help="mark a ready stage open in the candidate (repeatable)")  # fmt: skip
    ev.add_argument("--accept", action="store_true", help="compare-and-swap onto the head")
    ev.add_argument("--request", help="idempotency key of the acceptance (default: candidate id)")
    ev.add_argument(
        "--now",
        help="evaluation time, an instant with offset (default: the clock); evidence acquired"
        " now is stamped with the clock, so a --now in the past sees it as future evidence",
    )
    ev.add_argument("--no-acquire", action="store_true", help="use only stored evidence")
    ev.add_argument("--trace", action="store_true", help="print the whole evaluation record")
    _store(ev)
    ev.set_defaults(handler=run_evaluate)
    st = gsub.add_parser("status", help="the run's head and stage states")
    st.add_argument("--run", required=True, help="the run id")
    _store(st)
    st.set_defaults(handler=run_status)
    ex = gsub.add_parser("export", help="write a runpack folder")
    ex.add_argument("--run", required=True, help="the run id")
    ex.add_argument("--out", required=True, help="a new folder")
    _store(ex)
    ex.set_defaults(handler=run_export)
    ve = gsub.add_parser(
        "verify", help="verify a runpack by re-hashing and replay", description=VERIFY_HELP
    )
    ve.add_argument("dir", metavar="DIR")
    ve.add_argument("--now", help="verifier time (default: clock)")
    ve.add_argument("--max-age-s", type=int, help="fail freshness when the export is older")
    ve.set_defaults(handler=run_verify)
    sc = gsub.add_parser("scenario", help="built-in scenarios")
    ssub = sc.add_subparsers(title="scenario commands", metavar="COMMAND", parser_class=type(p))
    show = ssub.add_parser("show", help="print a built-in scenario's source")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true", help="print the normalised form and spec hash")
    show.set_defaults(handler=run_scenario_show)
    ls = ssub.add_parser("list", help="list the built-in scenarios")
    ls.set_defaults(handler=run_scenario_list)


def _store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="the SQLite store (default: STATE/gate.sqlite3)")


def resolve_scenario(name: str) -> Scenario:
    """A scenario file (``.toml``/``.json``) or a built-in scenario's name."""
    from factory.agent.evidence import read_nofollow
    from factory.gate.errors import SCENARIO_UNKNOWN
    from factory.gate.scenario import MAX_SCENARIO_BYTES, load_builtin, load_bytes

    path = Path(name)
    if path.suffix in (".toml", ".json") and path.exists():
        try:
            data = read_nofollow(path, limit=MAX_SCENARIO_BYTES + 1)
        except OSError as exc:
            raise SCENARIO_UNKNOWN("the scenario is not a readable regular file") from exc
        return load_bytes(data, path.suffix[1:])
    if path.suffix in (".toml", ".json") or "/" in name:
        raise SCENARIO_UNKNOWN(
            f"no scenario file {name}; give a .toml/.json path or a built-in name"
        )
    return load_builtin(name)


def _params(items: list[str]) -> dict[str, str]:
    from factory.gate.errors import PARAMS_INVALID

    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise PARAMS_INVALID(f"--param {item!r}: write NAME=VALUE")
        if name in out:
            raise PARAMS_INVALID(f"--param {name} is given twice; give it once")
        out[name] = value
    return out


def run_start(args: argparse.Namespace) -> int:
    scenario = resolve_scenario(args.scenario)
    params = _params(args.param)
    gate = open_gate(args)
    run, created = gate.start(args.run, scenario, params)
    print_json({**gate.status(run), "created": created})
    return 0


def run_submit(args: argparse.Namespace) -> int:
    from factory.gate.errors import EVIDENCE_REFUSED, EvidenceRefused
    from factory.gate.evidence import MAX_EVIDENCE_BYTES, parse_signature

    if (args.signature is None) != (args.key_id is None):
        raise EVIDENCE_REFUSED("--signature and --key-id go together")
    signature = None
    if args.signature is not None:
        try:
            signature = parse_signature(
                args.key_id, read_file(args.signature, "--signature", 4096).decode("ascii")
            )
        except EvidenceRefused as exc:
            raise EVIDENCE_REFUSED(f"--signature: {exc.fact}") from None
        except UnicodeDecodeError as exc:
            raise EVIDENCE_REFUSED(f"--signature: {exc}") from None
    payload = read_file(args.file, "the evidence file", MAX_EVIDENCE_BYTES)
    gate = open_gate(args)
    run = load_run(gate, args.run)
    record, stored = gate.submit(run, args.id, payload, signature)
    print_json({"schema": "factory.gate-submission/1", "run": run.run, **record.ref(),
            "condition": record.condition, "replayed": not stored})  # fmt: skip
    return 0


def run_status(args: argparse.Namespace) -> int:
    gate = open_gate(args, read_only=True)
    print_json(gate.status(load_run(gate, args.run)))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from factory.gate.runpack import export

    gate = open_gate(args, read_only=True)
    run = load_run(gate, args.run)
    manifest = export(gate, run, Path(args.out))
    print_json(
        {k: manifest[k] for k in ("schema", "run", "spec_hash", "head", "root_hash", "exported_at")}
    )
    return 0


def run_verify(args: argparse.Namespace) -> int:
    import time

    from factory.errors import ExitCode
    from factory.gate.verify import verify

    now = parse_instant_flag(args.now, "--now")
    report = verify(
        Path(args.dir), now=time.time_ns() if now is None else now, max_age_s=args.max_age_s
    )
    print_json(report)
    if report["ok"]:
        return int(ExitCode.OK)
    from factory.gate.errors import RUNPACK_NOT_VERIFIED

    failed = [name for name, p in report["properties"].items() if p["status"] == "fail"]
    say(RUNPACK_NOT_VERIFIED(f"{', '.join(failed)} failed").diagnostics())
    return int(ExitCode.FAILURE)


def run_scenario_show(args: argparse.Namespace) -> int:
    from factory.gate.scenario import builtin_source, load_builtin

    if args.json:
        scenario = load_builtin(args.name)
        print_json({"spec_hash": scenario.spec_hash, "spec": scenario.spec})
    else:
        emit_stdout(builtin_source(args.name))
    return 0


def run_scenario_list(args: argparse.Namespace) -> int:
    from factory.gate.scenario import builtin_names, load_builtin

    print_json(
        {
            "scenarios": [
                {"name": n, "spec_hash": load_builtin(n).spec_hash} for n in builtin_names()
            ]
        }
    )
    return 0

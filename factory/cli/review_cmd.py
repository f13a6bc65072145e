"""``factory review start | lens | finalize | status | show | schema`` (SPEC R).

Thin: flags are parsed here, the work is :mod:`factory.review`. Every command prints one
JSON object on stdout carrying ``next`` (the legal next commands) — a refusal too, as
``{"operation", "error": {code, message}, "next"}`` beside the usual one-line diagnostic on
stderr — except ``show`` (a readable rendering) and ``schema`` (a JSON Schema).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from factory.cli.collector import imports_settled
from factory.cli.framework import default_state_dir, emit_stdout, say
from factory.documents.emit import json_line

LENSES = ("risk", "resilience", "readability", "reliability")

HELP = """\
Review transactions: the model judges; code owns ids, hashes, budget, state and receipt.

  factory review start               freeze the candidate: risk, 0/1/4 lenses, genesis, budget
  factory review lens --lens NAME    run one selected lens once (codex, read-only sandbox)
  factory review finalize …          apply every transition the inputs allow (CAS each)
  factory review status | show       every lineage and its next legal commands | one, readable
  factory review schema ROLE         JSON Schema of reviewer, refuter or validator input
  factory review validate --gate G   allow or deny at pre-commit, pre-push, pre-pr, release
  factory review invalidate | recover | reclaim | repair   exits for stuck or invalid authority
  factory review install-hooks       plain git pre-commit and pre-push hooks (--uninstall)
  factory review push | fetch        mirror approved authority as refs/factory/review/v1/*
                                     (validate --from-refs judges with it, e.g. in CI)

The store lives under the git common dir (shared by linked worktrees):
<git-common-dir>/factory/review/v1/. Exit codes: 0 ok, 2 refused or malformed input
(nothing changed), 3 the lineage ended escalated, 4 typed failure (provider, CAS conflict,
busy store, invalid record), 1 internal error.
"""

START_HELP = """\
Snapshot the candidate of the repository that contains --cwd (default: the current
folder; the root is found by git, never assumed): tracked changes and every non-ignored
untracked file, raw bytes, no repository-configured program. Classify risk, freeze 0, 1
(--focus, default reliability) or 4 lenses, the genesis paths, the authored changed
lines (goldens excluded; golden globs come from --policy) and the correction budget
min(200, ceil(lines/2)), at least 2. The same snapshot resumes its lineage.
"""

LENS_HELP = """\
Run the selected lens NAME exactly once with the codex reviewer profile (read-only
sandbox, the reviewer schema as output schema), after a preflight that spends nothing
(lineage, state, binding, no result yet). The answer goes straight into the store; if it
cannot, the raw answer is preserved for 'finalize --replay-preserved'. With --rehearsal
the real CLI talks to a scripted loopback model: that proves the control path, nothing
about model judgement.
"""

FINALIZE_HELP = """\
Apply every transition the inputs allow, each persisted by compare-and-swap:
  --result FILE…         lens results produced elsewhere, in selected-lens order
  --replay-preserved F   a preserved lens answer, through the full capture path
  --refuter FILE         the one refuter batch for inferential candidate-caused findings
  --correction-lines N   the correction's size, forecast BEFORE editing (> 0)
  --validation FILE      after editing: the targeted validator (lines measured by git)
  --evidence FILE|-      final evidence: any non-empty bytes (hashed)
  --evidence-run -- CMD  final evidence: run CMD here under supervision (CMD after '--')
  --failed               stop as escalated (with --evidence: a failed final verification)
Malformed input changes nothing. Exit 0 (3 when the lineage ends escalated).
"""

STATUS_HELP = """\
List every review lineage of the repository that contains --cwd: state, store revision,
receipt, escalation and the legal next commands. A corrupt record is named and the
others are still listed. Changes nothing.
"""

SHOW_HELP = """\
Render one lineage for a person: target, risk and its reasons, lenses, findings and
their outcomes, correction attempts and budget, final evidence, the legal next commands.
Every recorded string is sanitised before it is shown. Changes nothing.
"""

SCHEMA_HELP = """\
Print the JSON Schema of the reviewer, refuter or validator input, generated from the
strict models finalize parses (unknown fields are refused).
"""


def _add_cwd(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", default=".", metavar="DIR", help="a folder of the repository")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "review", help="review transactions (start, lens, finalize …)", description=HELP
    )
    rsub = p.add_subparsers(title="review commands", metavar="COMMAND", parser_class=type(p))
    s = rsub.add_parser(
        "start", help="freeze the candidate and open a lineage", description=START_HELP
    )
    _add_cwd(s)
    s.add_argument(
        "--base-ref", metavar="REF", help="review HEAD + changes against REF's merge base"
    )
    s.add_argument("--focus", choices=LENSES, help="the one lens of a medium-risk change")
    s.add_argument("--policy", metavar="FILE", help="factory.review-policy/1 (golden globs)")
    s.set_defaults(handler=run_start)
    lens = rsub.add_parser("lens", help="run one selected lens once", description=LENS_HELP)
    lens.add_argument(
        "--lens", required=True, choices=LENSES, metavar="NAME", help=", ".join(LENSES)
    )
    _add_cwd(lens)
    lens.add_argument("--lineage", metavar="ID", help="the lineage (default: the open one)")
    lens.add_argument("--timeout-ms", type=int, default=600_000, metavar="N", help="1000..1800000")
    lens.add_argument(
        "--rehearsal",
        metavar="SCENARIO",
        help="scripted loopback model scenario (a file; demo: an answer that finds nothing)",
    )
    lens.set_defaults(handler=run_lens)
    f = rsub.add_parser(
        "finalize", help="apply every transition the inputs allow", description=FINALIZE_HELP
    )
    _add_cwd(f)
    f.add_argument("--lineage", metavar="ID", help="the lineage (default: the open one)")
    f.add_argument("--result", action="append", default=[], metavar="FILE", help="repeatable")
    f.add_argument("--refuter", metavar="FILE")
    f.add_argument("--validation", metavar="FILE")
    f.add_argument("--evidence", metavar="FILE|-")
    f.add_argument("--correction-lines", type=int, metavar="N")
    f.add_argument("--failed", action="store_true")
    f.add_argument("--replay-preserved", metavar="FILE")
    f.add_argument(
        "--evidence-run", action="store_true", help="run the command given after '--' as evidence"
    )
    f.add_argument("command", nargs="*", metavar="-- CMD", help="the --evidence-run command")
    f.set_defaults(handler=run_finalize)
    st = rsub.add_parser(
        "status",
        help="every lineage and its next legal commands",
        description=STATUS_HELP,
    )
    _add_cwd(st)
    st.set_defaults(handler=run_status)
    sh = rsub.add_parser(
        "show",
        help="one lineage, readable (sanitised)",
        description=SHOW_HELP,
    )
    _add_cwd(sh)
    sh.add_argument("--lineage", metavar="ID", help="the lineage (default: the open one)")
    sh.set_defaults(handler=run_show)
    sc = rsub.add_parser(
        "schema",
        help="JSON Schema of a judgement input",
        description=SCHEMA_HELP,
    )
    sc.add_argument("role", choices=("reviewer", "refuter", "validator"))
    sc.set_defaults(handler=run_schema)
    from factory.cli import review_gates_cmd

    review_gates_cmd.register(rsub)


def _emit(doc: dict[str, Any]) -> None:
    emit_stdout(json_line(doc, indent=2))


def _corrupt_next(cwd: str | None, exc: Exception) -> list[str]:
    """The ceremony that takes the invalid record ``exc`` names out of the store (a corrupt
    record's refusal is never a dead end); ``status`` when none can be derived."""
    lineage = getattr(exc, "lineage_id", None)
    if cwd is None or lineage is None:
        return []
    from factory.errors import FactoryError
    from factory.review.exits import exits_for
    from factory.review.service import open_context

    try:
        found = exits_for(open_context(Path(cwd)).store, [lineage])
    except FactoryError:
        found = ()
    return [*found, "factory review status"]


def _guard(operation: str, body: Callable[[], int], cwd: str | None = None) -> int:
    """Run ``body``; on a typed error also print a JSON refusal with ``next`` on stdout
    (``cwd``: the repository, to name the exit of an invalid record)."""
    from factory.errors import FactoryError

    try:
        return body()
    except FactoryError as exc:
        doc: dict[str, Any] = {
            "operation": operation,
            "error": {"code": exc.code, "message": exc.message},
            "next": list(getattr(exc, "next", ())) or _corrupt_next(cwd, exc),
        }
        preserved = getattr(exc, "preserved", None)
        if preserved is not None:
            doc["preserved"] = preserved
        expected = getattr(exc, "expected", None)  # the maintainer authorization binding
        if expected is not None:
            doc["expected_authorization"] = expected
        _emit(doc)
        raise


def run_start(args: argparse.Namespace) -> int:
    with imports_settled():
        from factory.review.service import start

    def body() -> int:
        policy = Path(args.policy) if args.policy is not None else None
        _emit(start(Path(args.cwd), base_ref=args.base_ref, focus=args.focus, policy_path=policy))
        return 0

    return _guard("review/start", body, args.cwd)


def run_finalize(args: argparse.Namespace) -> int:
    with imports_settled():
        from factory.errors import UsageError
        from factory.review.finalize import FinalizeArgs, finalize
        from factory.review.service import open_context

    def body() -> int:
        run = tuple(args.command) if args.evidence_run else None
        if args.evidence_run and not run:
            raise UsageError("--evidence-run needs a command after '--'")
        if args.command and not args.evidence_run:
            raise UsageError("a command after '--' is only taken with --evidence-run")
        if run is not None and args.evidence is not None:
            raise UsageError("give --evidence or --evidence-run, not both")
        fargs = FinalizeArgs(
            lineage=args.lineage,
            results=tuple(Path(p) for p in args.result),
            refuter=Path(args.refuter) if args.refuter else None,
            validation=Path(args.validation) if args.validation else None,
            evidence=args.evidence,
            evidence_run=run,
            correction_lines=args.correction_lines,
            failed=args.failed,
            replay=Path(args.replay_preserved) if args.replay_preserved else None,
        )
        view, code = finalize(open_context(Path(args.cwd)), fargs)
        _emit(view)
        return code

    return _guard("review/finalize", body, args.cwd)


def run_status(args: argparse.Namespace) -> int:
    with imports_settled():
        from factory.review.service import status

    def body() -> int:
        _emit(status(Path(args.cwd)))
        return 0

    return _guard("review/status", body, args.cwd)


def run_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from factory.cli.framework import GuardedStdout
    from factory.review.errors import ReviewRecordCorrupt
    from factory.review.exits import exits_for
    from factory.review.render import render
    from factory.review.service import open_context, resolve_lineage
    from factory.review.store import Corrupt

    ctx = open_context(Path(args.cwd))
    try:
        item: Any = resolve_lineage(ctx, args.lineage)
    except ReviewRecordCorrupt as exc:
        # without --lineage, the record in the way is rendered with its ceremony (issue 23)
        named = args.lineage or getattr(exc, "lineage_id", None)
        if named is None:
            raise
        item = Corrupt(named, exc)
    exits = exits_for(ctx.store, [item.lineage_id]) if isinstance(item, Corrupt) else ()
    out = GuardedStdout()  # a reader gone (| head) is not a failure; a full device is exit 4
    render(item, Console(soft_wrap=False, file=out), exits)  # type: ignore[arg-type]
    out.check()
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from factory.review.judgement import json_schema

    _emit(json_schema(args.role))
    return 0


REHEARSAL_BANNER = (
    "factory review lens: REHEARSAL (--rehearsal): the real CLI talks to a scripted loopback "
    "model; this proves the control path, nothing about model judgement."
)


def load_reviewer() -> Any:
    """The codex profile (the one place this command reaches into ``providers/``)."""
    import providers

    return providers.codex_profile()


def run_lens(args: argparse.Namespace) -> int:
    with imports_settled():
        from factory.errors import UsageError
        from factory.review.lens_service import run_one_lens

    def body() -> int:
        if not 1000 <= args.timeout_ms <= 1_800_000:
            raise UsageError("--timeout-ms must be between 1000 and 1800000")
        scenario = None
        if args.rehearsal is not None:
            from factory.rehearsal import load_scenario
            from factory.rehearsal.scenario import BUILTIN_DIR, scenario_path

            path = scenario_path(args.rehearsal)
            if path.parent == BUILTIN_DIR:  # 'demo' scripts the agent cycle, not a lens:
                from factory.batch.reviewing import scripted_lens  # the batch's lens answer

                scenario = scripted_lens(args.lens)
            else:
                scenario = load_scenario(path)
        view = run_one_lens(
            Path(args.cwd), args.lens, load_reviewer(), lineage=args.lineage,
            timeout_ms=args.timeout_ms, scenario=scenario,
            incident_fallback=default_state_dir() / "review-incidents",
            admitted=None if scenario is None else (lambda: say(REHEARSAL_BANNER)),
        )  # fmt: skip
        _emit(view)
        if scenario is not None:
            say(REHEARSAL_BANNER)
        return 0

    return _guard("review/lens", body, args.cwd)


__all__ = ["register"]

"""``factory batch run | verify | show``: many tasks at once (SPEC M-2, M-3).

The decisions live in :mod:`factory.batch`; this module parses flags and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from factory.cli.framework import emit_stdout, say
from factory.config.commands import BATCH_RUN, help_epilog
from factory.errors import UsageError

BAD_TEST = UsageError.define("batch-test-command", "write it as --test -- ARGV… (argv, no shell)")

RUN_HELP = """\
Run every task of TASKS (a factory.batch-tasks/1 file: TOML with [[tasks]] tables, or JSONL,
one task per line: id, task, optional base, test, labels, queue) — or, with --from-forge
OWNER/NAME, of the forge's open issues carrying --label (read as 'operator plan' reads
them; task ids issue-<number>) — as 'factory agent --repo R' runs it, each in a worktree
of its own on a new branch, several at once. The rehearsal route's scenario: --rehearsal
FILE, or --rehearsal demo for the one factory ships (the demo's: each task approved).

--jobs caps the tasks running at once (default 2); --per-login caps those sharing one
provider login (default 1 on the subscription route: parallel sessions of one subscription
login log each other out as their refresh tokens rotate; the rehearsal route has no login).
The api route takes provider API keys only from a source you name — --credentials FILE (a
private JSON or TOML file: anthropic_api_key, codex_api_key) or --credentials-env NAME (the
same as JSON in that variable) — never from your environment by accident; keys have no
shared refresh token, so only --jobs caps it. Receipts record the route, never a key.
Each task is a child process under factory's supervisor: Ctrl-C, SIGTERM, --task-deadline-s
and --deadline-s end its whole process tree and leave its receipt terminal.

--out DIR holds the journal (batch.sqlite3), each attempt's receipt and evidence
(tasks/<id>/attempt-<n>/), and batch-report.json (factory.batch-report/1). Run the same
command again to resume: a task whose receipt verifies is never run again; interrupted or
unfinished ones run again in a new worktree. Publication stays one operator grant per
candidate: a batch never pushes.

No task starts while less than --min-free-mb (default 1024) is free for DIR or the
worktrees; --remove-done removes each finished task's worktree (branch, receipt and
evidence stay). --engine temporal runs the tasks on 'factory worker' machines instead (see
'Batches beyond one machine' in the README).

--test -- ARGV…: after every approved task, the decision gate for its candidate, as
'factory publish' runs it (the test command run by factory in the task's worktree as
evidence; on the rehearsal route the publish-candidate-rehearsal scenario), evaluated and
accepted — and nothing past it: a batch never pushes or opens a pull request. --review
first runs the review transaction in the task's worktree (its selected lenses spent by
factory with the reviewer CLI — scripted answers on the rehearsal route — then finalized
with the tests as evidence), so a candidate whose risk selects a lens can be accepted.

Progress on stderr: a live table at a terminal, factory.batch-progress/1 JSON lines
otherwise (--progress). stdout: the report. Exit 0 every task completed (and, with --test,
its gate accepted), 3 some rejected or held by the gate, 4 some failed or were not run, 2
refused (nothing ran), 130 interrupted.
"""

VERIFY_HELP = """\
Verify a batch folder offline: the report's revision and canonical bytes, and every receipt
it binds with the checks of 'factory receipt verify', each against the revision the report
recorded. stdout: factory.batch-verification/1 JSON. Exit 0 all hold, 4 otherwise.
"""

SHOW_HELP = """\
Show a batch for the operator reviewing it: each task's outcome, whether its receipt
verifies now, and the commands to look closer. --html OUT writes one page linking each
receipt's own page (written beside it). Exit 0, or 4 when something does not verify.
"""


class _TestTail:
    """Splits ``--test -- ARGV…`` off the end before the flags are parsed: argparse gives
    every word after ``--`` to the positionals, and TASKS is one."""

    @staticmethod
    def split(args: list[str]) -> tuple[list[str], list[str] | None]:
        if "--test" not in args:
            return args, None
        i = args.index("--test")
        if i + 1 >= len(args) or args[i + 1] != "--" or i + 2 >= len(args):
            raise BAD_TEST("--test needs the command after '--' (--test -- ARGV…)")
        return args[:i], args[i + 2 :]


def register(sub: Any) -> None:
    p = sub.add_parser("batch", help="run many tasks at once")
    base = type(p)

    class BatchParser(base):  # type: ignore[valid-type,misc]
        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            words, tail = _TestTail.split(list(args or []))
            ns, extras = super().parse_known_args(words, namespace)
            if getattr(ns, "test_argv", None) is None:
                ns.test_argv = tail
            return ns, extras

    bsub = p.add_subparsers(title="batch commands", metavar="COMMAND", parser_class=BatchParser)
    r = bsub.add_parser(
        "run", help="run a tasks file", description=RUN_HELP, epilog=help_epilog(BATCH_RUN)
    )
    r.add_argument(
        "tasks", metavar="TASKS", nargs="?", help="factory.batch-tasks/1 file (.toml or .jsonl)"
    )
    r.add_argument("--from-forge", metavar="OWNER/NAME", help="tasks: the forge's open issues")
    r.add_argument("--label", default="factory", help="with --from-forge: the label (factory)")
    r.add_argument("--forge-url", help="with --from-forge: the API root (default GitHub's)")
    r.add_argument("--repo", required=True, help="the repository the tasks run on")
    r.add_argument("--out", required=True, help="the batch folder (created; reused to resume)")
    r.add_argument("--jobs", type=int, default=2, help="tasks at once (default 2)")
    r.add_argument("--per-login", type=int, default=1, help="tasks at once per login (default 1)")
    r.add_argument("--base", help="revision the tasks start from (default HEAD)")
    r.add_argument("--timeout-ms", type=int, default=600_000, help="each agent run's limit")
    r.add_argument("--task-deadline-s", type=_seconds, help="wall-clock limit of one task")
    r.add_argument("--deadline-s", type=_seconds, help="wall-clock limit of the whole batch")
    r.add_argument("--min-free-mb", type=int, default=1024, help="free-space floor (MB)")
    r.add_argument("--remove-done", action="store_true", help="remove finished worktrees")
    r.add_argument("--review", action="store_true", help="with --test: the review transaction")
    r.add_argument("--credentials", metavar="FILE", help="the api route: keys from this file")
    r.add_argument("--credentials-env", metavar="NAME", help="the api route: keys from NAME")
    r.add_argument("--progress", choices=("human", "jsonl"), help="progress format on stderr")
    r.add_argument("--rehearsal", metavar="SCENARIO", help="the rehearsal route (scripted model)")
    from factory.cli.agent_cmd import add_choice_flags

    add_choice_flags(r)  # passed to every task's 'factory agent'
    r.add_argument("--engine", choices=("local", "temporal"), default="local")
    r.add_argument("--temporal", metavar="HOST:PORT", help="Temporal server (--engine temporal)")
    r.add_argument("--task-queue", help="default task queue (temporal; default factory)")
    r.add_argument("--remote", help="remote name or URL the workers clone (default origin)")
    r.usage = (
        "factory batch run (TASKS | --from-forge OWNER/NAME) --repo R --out DIR [options]"
        " [--test -- ARGV…]"
    )
    r.set_defaults(handler=run_run, test_argv=None)
    v = bsub.add_parser("verify", help="verify a batch folder offline", description=VERIFY_HELP)
    v.add_argument("dir", metavar="DIR")
    v.set_defaults(handler=run_verify)
    s = bsub.add_parser("show", help="show a batch for review", description=SHOW_HELP)
    s.add_argument("dir", metavar="DIR")
    s.add_argument("--html", metavar="OUT.html", help="also write one page")
    s.set_defaults(handler=run_show)


def run_run(args: argparse.Namespace) -> int:
    from factory.batch.admission import BatchCall
    from factory.batch.service import run_batch
    from factory.choices import choices_of
    from factory.cli.framework import refuse_non_utf8

    refuse_non_utf8(args, {"tasks": "TASKS", "repo": "--repo", "out": "--out", "base": "--base"})

    def path(value: str | None) -> Path | None:
        return None if value is None else Path(value)

    if args.review and not args.test_argv:
        raise BAD_TEST("--review finalizes with the tests as evidence: give --test -- ARGV… too")
    call = BatchCall(
        tasks=path(args.tasks),
        from_forge=args.from_forge,
        label=args.label,
        forge_url=args.forge_url,
        repo=Path(args.repo),
        out=Path(args.out),
        jobs=args.jobs,
        per_login=args.per_login,
        base=args.base,
        rehearsal=_scenario(args.rehearsal),
        timeout_ms=args.timeout_ms,
        task_deadline_s=args.task_deadline_s,
        deadline_s=args.deadline_s,
        min_free_mb=args.min_free_mb,
        remove_done=args.remove_done,
        progress=args.progress,
        engine=args.engine,
        temporal=args.temporal,
        task_queue=args.task_queue,
        remote=args.remote,
        test_argv=tuple(args.test_argv) if args.test_argv else None,
        review=args.review,
        credentials=path(args.credentials),
        credentials_env=args.credentials_env,
        choices=choices_of(args),
    )
    done = run_batch(call)
    counts = ", ".join(f"{v} {k}" for k, v in done.report.counts.items())
    say(f"factory batch: {counts}; report {Path(args.out) / 'batch-report.json'}")
    _say_why(done.report.tasks)
    if done.report.route == "rehearsal":
        say("factory batch: REHEARSAL — scripted model, proves the control path only")
    emit_stdout(done.report.canonical() + b"\n", kept_in=str(Path(args.out) / "batch-report.json"))
    return done.exit_code


def run_verify(args: argparse.Namespace) -> int:
    from factory.batch.report import verify_batch

    result = verify_batch(Path(args.dir))
    for problem in result["problems"]:
        from factory.display import safe_line

        say(safe_line(f"factory batch verify: {problem}"))
    emit_stdout((json.dumps(result, ensure_ascii=True, sort_keys=True) + "\n").encode())
    return 0 if result["ok"] else 4


def run_show(args: argparse.Namespace) -> int:
    from factory.batch.show import render_html, render_text

    folder = Path(args.dir)
    if args.html:
        from factory.cli.receipt_cmd import reserve_html

        reserve_html(Path(args.html))
    text, ok = render_text(folder)
    if args.html:
        render_html(folder, Path(args.html))
    if sys.stdout is not None:
        emit_stdout(text.encode("utf-8"))
    return 0 if ok else 4


def _scenario(value: str | None) -> Path | None:
    """``--rehearsal``'s file (a path, or a built-in name); the rehearsal package is
    imported only when the flag is given."""
    if value is None:
        return None
    from factory.rehearsal.scenario import scenario_path

    return scenario_path(value)


def _say_why(tasks: list[Any]) -> None:
    """One stderr line per task that did not complete, with its error, and per candidate
    the decision gate did not accept, with the first line of its reason (the first five)."""
    from factory.display import safe_line

    lines = [
        f"{t.id} {t.outcome}: {t.error}"
        for t in tasks
        if t.outcome not in ("completed", "rejected") and t.error
    ]
    for t in tasks:
        if t.gate is not None and t.gate.state != "accepted":
            first = (t.gate.why or "").partition("\n")[0]
            lines.append(f"{t.id} decision gate {t.gate.state}" + (f": {first}" if first else ""))
    for line in lines[:5]:
        say(safe_line(f"factory batch: {line}"))
    if len(lines) > 5:
        say(f"factory batch: {len(lines) - 5} more; see the report")


def _seconds(text: str) -> float:
    """A deadline: a positive, finite number of seconds (``nan`` and ``inf`` parse as
    floats and would pass a ``<= 0`` check)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"not a positive, finite number of seconds: {text!r}")
    return value

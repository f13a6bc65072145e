"""``factory demo``: the README's main job on its embedded default (SPEC A, P-5).

Creates a sample repository with a real bug under ``state/`` and runs, through ``factory
agent --repo`` (factory creates the linked worktree itself), the full agent cycle on the
rehearsal route — the real, pinned Claude Code and Codex CLIs
against a scripted loopback model: the worker fixes the bug, the reviewer asks for a test,
the repair adds it, a fresh reviewer approves — then verifies the receipt and renders it.

It says plainly, at the start and in its output, that this is a rehearsal: the model is
scripted, so the run proves the control path and nothing about model judgement.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
from pathlib import Path
from typing import TYPE_CHECKING

from factory.cli.framework import GuardedStdout, default_state_dir, emit_stdout, say
from factory.display import inert
from factory.usercmd import shown_path

if TYPE_CHECKING:
    from factory.cli.framework import Subcommands
    from factory.demo.sample import Sample

HELP = """\
Run the whole agent cycle once, end to end, on a sample repository — as a REHEARSAL.

The real, pinned Claude Code (worker, repair) and Codex (read-only reviewer) CLIs run
against a scripted loopback model started by factory on 127.0.0.1: the worker fixes a
bug in median(), the reviewer requests a test, one repair adds it, a fresh reviewer
approves. The receipt is then verified and shown. A rehearsal proves the control path,
nothing about model judgement. Needs the pinned CLIs (./scripts/setup installs them).

Files go to a new folder (default: state/demo-<UTC time>): repo/, worktree/ (the linked
worktree the run creates, as 'factory agent --repo' does), receipt.json,
receipt.json.evidence/ and demo-report.json (factory.demo-report/1).
stdout: the receipt as a person reads it, ending on the outcome and the next commands;
with --json, the demo report instead (the readable screen then goes to stderr).
Exit: the agent run's (0 completed, 3 rejected, 4 failed, 130 interrupted), or 4 when
the receipt does not verify.

--pipeline walks the whole path after the agent cycle, still as a REHEARSAL: a review
transaction with scripted lenses (factory review start / lens --rehearsal / finalize),
the decision gate (scenario publish-candidate-rehearsal: factory runs the sample's tests,
asks the review check, evaluates and accepts), then the operator's own session, which
refuses the rehearsal receipt (rehearsal-receipt) before any prompt, key or forge, and
'factory operator verify --deep' of that receipt. Extra files: gate.sqlite3,
publish.operator.json and its runpack publish.operator.json.gate/. Exit 0 when it ends
exactly there (the chain so far verified), else 4 (or the agent run's exit code).
"""

BANNER = (
    "factory demo: REHEARSAL. The real Claude Code and Codex CLIs run against a scripted "
    "loopback model; this proves the control path, nothing about model judgement."
)
REPORT_NAME = "demo-report.json"


def register(sub: Subcommands) -> None:
    from factory.cli.framework import default_state_dir

    # The default folder as it is on this installation (a checkout's state/, else
    # $FACTORY_STATE_DIR or the user's state folder), never a placeholder.
    where = f"{default_state_dir()}/demo-<UTC time>"
    p = sub.add_parser(
        "demo",
        help="rehearse the agent cycle on a sample repository",
        description=HELP.replace("state/demo-<UTC time>", where),
    )
    p.add_argument("--dir", metavar="D", help="new folder for the demo (must not exist)")
    p.add_argument(
        "--progress", choices=("human", "jsonl"), default="human", help="stderr progress format"
    )
    p.add_argument(
        "--timeout-ms",
        type=int,
        default=120_000,
        metavar="N",
        help="per provider invocation, 1000..1800000 (default 120000)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the demo report (JSON) on stdout; the readable screen goes to stderr",
    )
    p.add_argument(
        "--pipeline",
        action="store_true",
        help="then review, decision gate and operator, ending on the operator's refusal "
        "of the rehearsal receipt",
    )
    p.add_argument(
        "--otel-endpoint",
        metavar="URL",
        help="send OpenTelemetry spans over OTLP/HTTP to a literal loopback IP, "
        "e.g. http://127.0.0.1:4318 (names, localhost included, are refused)",
    )
    p.set_defaults(handler=run)


def _demo_dir(arg: str | None) -> Path:
    if arg is not None:
        # Absolute: git runs in the sample repo's folder, where a relative path means
        # something else (observed: --dir ../demo failed with worktree-missing).
        return Path(os.path.abspath(arg))
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return default_state_dir() / f"demo-{stamp}"


def run(args: argparse.Namespace) -> int:
    from importlib.resources import files

    from factory import fsio
    from factory.cli import agent_cmd
    from factory.cli.agent_exec import AgentCall, execute
    from factory.demo.sample import DEMO_BRANCH, DEMO_TASK, create_sample

    agent_cmd.check_endpoint(args.otel_endpoint)  # refused (exit 2) before anything exists
    if args.pipeline and args.json:
        from factory.errors import USAGE

        raise USAGE("--json is not available with --pipeline (its records are files)")
    # The providers first: without them the demo refuses before its folder exists, and
    # the refusal names the folders searched and how to install them (issue 28).
    from factory.cli.agent_exec import load_profiles
    from factory.cli.preflight import preflight

    preflight(*load_profiles(), route="rehearsal")
    root = _demo_dir(args.dir)
    root.parent.mkdir(parents=True, exist_ok=True)
    fsio.claim_dir(root, mode=0o755)
    say(inert(f"demo folder: {shown_path(root)}"))
    sample = create_sample(root)
    receipt = root / "receipt.json"
    scenario = Path(str(files("factory.demo").joinpath("scenario.json")))
    call = AgentCall(
        repo=sample.repo,
        worktree_dir=sample.worktree,
        branch=DEMO_BRANCH,
        task=DEMO_TASK,
        out=receipt,
        timeout_ms=args.timeout_ms,
        progress=args.progress,
        otel_endpoint=args.otel_endpoint,
        rehearsal=scenario,
    )
    # The banner once the providers are found and the run starts, never above a refusal.
    exit_code, _ = execute(call, started=lambda: say(BANNER))
    if args.pipeline:
        return _finish_pipeline(args, root, sample, receipt, exit_code)
    return _finish(args, root, receipt, exit_code)


def _finish_pipeline(
    args: argparse.Namespace, root: Path, sample: Sample, receipt: Path, exit_code: int
) -> int:
    """Review, gate, operator, deep verification, then the pipeline's last screen."""
    from rich.console import Console

    from factory.agent.verify import load_receipt
    from factory.demo.screen import COMMAND_STYLE, verdict_line
    from factory.errors import ExitCode
    from factory.pipeline import demo as pipeline
    from factory.pipeline.demo_screen import pipeline_lines

    walk = pipeline.Walk(root, say)
    model = None
    if exit_code == 0:
        model, _ = load_receipt(receipt)
        if pipeline.review(walk, sample, args.timeout_ms):
            pipeline.gate_and_operator(walk, sample, receipt)
    agent = (
        f"{model.status}, {verdict_line(model)} (route {model.route})"
        if model is not None
        else f"the agent run did not complete (exit {exit_code}); nothing else ran"
    )
    out = GuardedStdout()  # a reader gone (| head) is not a failure; a full device is exit 4
    console = Console(soft_wrap=False, file=out)  # type: ignore[arg-type]
    console.print()
    for line in pipeline_lines(walk, agent):
        console.print(line, soft_wrap=line.style == COMMAND_STYLE)
    out.check(kept_in=str(root))
    if exit_code != 0:
        return exit_code
    return int(ExitCode.OK if pipeline.expected_end(walk) else ExitCode.FAILURE)


def _finish(args: argparse.Namespace, root: Path, receipt: Path, exit_code: int) -> int:
    """Verify, write the report, show the receipt and end on the outcome."""
    from rich.console import Console

    from factory import fsio
    from factory.agent.receipt_show import render_verified
    from factory.agent.verification import ReceiptVerification
    from factory.agent.verify import failed_checks, load_receipt, verify
    from factory.demo.report import DemoReport
    from factory.demo.screen import COMMAND_STYLE, DemoPaths, next_commands, outcome_lines
    from factory.errors import ExitCode, FactoryError

    paths = DemoPaths(
        root=root, receipt=receipt, report=root / REPORT_NAME, html=root / "receipt.html"
    )
    model = None
    checked: ReceiptVerification | None = None
    try:
        checked = verify(receipt)
        model, _ = load_receipt(receipt)
    except FactoryError as exc:
        say(exc.shown())
    report = checked.to_json_value() if checked is not None else None
    failed = failed_checks(checked) if checked is not None and not checked.ok else []
    out = DemoReport(
        demo_dir=str(root),
        receipt=str(receipt),
        exit_code=exit_code,
        verification=checked,
        next=next_commands(paths)[0],
    )
    data = out.data()
    fsio.write_exclusive(paths.report, data, mode=0o644)
    screen = GuardedStdout()  # a reader gone (| head) is not a failure; a full device: exit 4
    console = Console(soft_wrap=False, file=screen)  # type: ignore[arg-type]
    if args.json:
        console = Console(stderr=True, soft_wrap=False)
    if model is not None and report is not None:
        try:
            render_verified(model, report, console, receipt_path=receipt)
        except Exception as exc:  # the rendering is a courtesy; the outcome below stands
            say(f"demo: could not render the receipt ({type(exc).__name__})")
    console.print()
    for line in outcome_lines(model, exit_code, report, failed, paths):
        # Prose wraps at words; a command (COMMAND_STYLE) is left for the terminal to wrap,
        # so a long one still pastes whole.
        console.print(line, soft_wrap=line.style == COMMAND_STYLE)
    screen.check(kept_in=str(paths.report))
    if args.json:
        emit_stdout(data)
    if exit_code != 0:
        return exit_code
    return int(ExitCode.OK if checked is not None and checked.ok else ExitCode.FAILURE)

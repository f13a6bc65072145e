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
import json
from pathlib import Path
from typing import Any

from factory.cli.framework import default_state_dir, emit_stdout, say

HELP = """\
Run the whole agent cycle once, end to end, on a sample repository — as a REHEARSAL.

The real, pinned Claude Code (worker, repair) and Codex (read-only reviewer) CLIs run
against a scripted loopback model started by factory on 127.0.0.1: the worker fixes a
bug in median(), the reviewer requests a test, one repair adds it, a fresh reviewer
approves. The receipt is then verified and shown. A rehearsal proves the control path,
nothing about model judgement. Needs the pinned CLIs (./scripts/setup installs them).

Files go to a new folder (default: state/demo-<UTC time>): repo/, worktree/ (the linked
worktree the run creates, as 'factory agent --repo' does), receipt.json and
receipt.json.evidence/. stdout: a factory.demo-report/1 JSON object.
"""

BANNER = (
    "factory demo: REHEARSAL. The real Claude Code and Codex CLIs run against a scripted "
    "loopback model; this proves the control path, nothing about model judgement."
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="rehearse the agent cycle on a sample repository", description=HELP
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
    p.set_defaults(handler=run)


def _demo_dir(arg: str | None) -> Path:
    if arg is not None:
        return Path(arg)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return default_state_dir() / f"demo-{stamp}"


def run(args: argparse.Namespace) -> int:
    from importlib.resources import files

    from rich.console import Console

    from factory import fsio
    from factory.agent.verify import verify
    from factory.cli import agent_cmd
    from factory.demo.sample import DEMO_BRANCH, DEMO_TASK, create_sample
    from factory.errors import ExitCode

    root = _demo_dir(args.dir)
    root.parent.mkdir(parents=True, exist_ok=True)
    fsio.claim_dir(root, mode=0o755)
    say(BANNER)
    say(f"demo folder: {root}")
    sample = create_sample(root)
    receipt = root / "receipt.json"
    scenario = Path(str(files("factory.demo").joinpath("scenario.json")))
    agent_args = argparse.Namespace(
        worktree=None,
        repo=str(sample.repo),
        base=None,
        worktree_dir=str(sample.worktree),
        branch=DEMO_BRANCH,
        task=DEMO_TASK,
        out=str(receipt),
        evidence=None,
        timeout_ms=args.timeout_ms,
        progress=args.progress,
        otel_endpoint=None,
        rehearsal=str(scenario),
    )
    exit_code, _ = agent_cmd.execute(agent_args)
    report = verify(receipt)
    console = Console(stderr=True, soft_wrap=False)
    try:
        from factory.agent.receipt_show import render

        render(json.loads(receipt.read_bytes()), console)
    except Exception as exc:  # the rendering is a courtesy; the verified facts are below
        say(f"demo: could not render the receipt ({type(exc).__name__})")
    say(BANNER)
    out = {
        "schema": "factory.demo-report/1",
        "execution": "rehearsal: scripted loopback model; proves the control path, nothing "
        "about model judgement",
        "demoDir": str(root),
        "receipt": str(receipt),
        "exitCode": exit_code,
        "verification": report,
        "next": f"factory receipt show {receipt}",
    }
    emit_stdout((json.dumps(out, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    if exit_code != 0:
        return exit_code
    return int(ExitCode.OK if report["ok"] is True else ExitCode.FAILURE)

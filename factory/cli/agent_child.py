"""``python -I -m factory.cli.agent_child REQUEST``: one agent attempt in a child process
(issue 25).

Not a CLI: the one argument is the path of a ``factory.agent-child-request/1`` document
(:class:`factory.batch.child_request.AgentChildRequest`) that a batch or a remote worker
wrote before starting this process. The attempt runs as ``factory agent --repo`` runs it
(:func:`factory.cli.agent_exec.execute`, progress as JSON lines on stderr), the receipt is
written at the request's ``out`` and nothing is printed on stdout: the parent reads the
receipt from disk and verifies it in-process. Exit codes and the one ``factory: <code>:``
diagnostic line on a refusal are those of every factory command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from factory.cli.framework import StrictParser, run_command
from factory.errors import UsageError

REQUEST_INVALID = UsageError.define(
    "agent-request-invalid", "the parent wrote a request this factory cannot read; upgrade both"
)


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from factory.batch.child_request import AgentChildRequest
    from factory.cli.agent_exec import AgentCall, _scenario, execute
    from factory.cli.agent_signals import SIGNALS
    from factory.errors import ExitCode
    from factory.models import describe_validation_error

    try:
        with open(args.request, "rb") as f:
            data = f.read(1 << 20)
        req = AgentChildRequest.model_validate_json(data)
    except OSError as exc:
        raise REQUEST_INVALID(f"the agent request could not be read ({exc.strerror})") from None
    except ValidationError as exc:
        raise REQUEST_INVALID(
            f"the agent request is invalid: {describe_validation_error(exc)}"
        ) from None
    SIGNALS.install()
    call = AgentCall(
        task=req.task,
        out=Path(req.out),
        repo=Path(req.repo),
        base=req.base,
        worktree_dir=None if req.worktree_dir is None else Path(req.worktree_dir),
        branch=req.branch,
        timeout_ms=req.timeout_ms,
        progress="jsonl",
        rehearsal=_scenario(req.rehearsal),
        credentials=None if req.credentials is None else Path(req.credentials),
        credentials_env=req.credentials_env,
        choices=req.choices(),
    )
    exit_code, _ = execute(call)  # the receipt is on disk at req.out
    return int(ExitCode.INTERRUPTED) if SIGNALS.seen else exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """As :func:`factory.cli.main.main` starts every command: no pydantic plugin, the
    standard file descriptors held; then the one request."""
    from factory.cli.main import _hold_standard_fds
    from factory.pydantic_setup import disable_plugins

    disable_plugins()
    _hold_standard_fds()
    parser = StrictParser(prog="factory.cli.agent_child", add_help=False)
    parser.add_argument("request", metavar="REQUEST")
    parser.set_defaults(handler=_run)
    return run_command(parser, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())

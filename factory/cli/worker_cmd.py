"""``factory worker``: run batch tasks handed out by a Temporal server (SPEC M-3)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from factory.errors import UsageError

ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")
BAD_ADDRESS = UsageError.define(
    "temporal-address-invalid", "give the server as HOST:PORT (e.g. 127.0.0.1:7233)"
)
BAD_JOBS = UsageError.define("worker-jobs-invalid", "give --jobs a whole number from 1 to 64")
BAD_WORKDIR = UsageError.define("worker-workdir-invalid", "give --workdir a folder (made if new)")

HELP = """\
Take tasks of a distributed batch ('factory batch run --engine temporal') from a Temporal
server and run them on this machine, each in a fresh clone of the batch's remote, with the
agent cycle under factory's supervisor as 'factory agent --repo' runs it. The result of
each task (receipt, evidence, candidate) is pushed back to the remote under
refs/factory/runs/<task>/<revision>; the machine that submitted the batch verifies it
before it counts.

The worker opens no port: it connects out to the server and polls --task-queue. Give each
worker machine its own provider logins and route tasks to it by task queue; nothing secret
travels through Temporal or git. --jobs caps the tasks run here at once (default 1).

Runs until Ctrl-C or SIGTERM: attempts in progress are cancelled and their process trees
ended; Temporal gives those tasks to another worker. Exit codes: 130 stopped, 2 bad flags,
4 the server could not be reached.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("worker", help="run tasks of distributed batches", description=HELP)
    p.add_argument("--temporal", required=True, metavar="HOST:PORT", help="the Temporal server")
    p.add_argument("--task-queue", default="factory", help="the queue to poll (default: factory)")
    p.add_argument("--namespace", default="default", help="Temporal namespace (default: default)")
    p.add_argument("--jobs", type=int, default=1, help="tasks at once on this machine (1-64)")
    p.add_argument("--workdir", required=True, help="folder for clones, worktrees and receipts")
    p.add_argument("--identity", default="", help="name shown in results (default: host:pid)")
    p.set_defaults(handler=run)


def check_address(address: str) -> str:
    if not ADDRESS.fullmatch(address) or not 0 < int(address.rsplit(":", 1)[1]) < 65536:
        raise BAD_ADDRESS(f"--temporal {address!r} is not HOST:PORT")
    return address


def run(args: argparse.Namespace) -> int:
    from factory.cli.framework import refuse_non_utf8

    refuse_non_utf8(args, {"workdir": "--workdir", "identity": "--identity"})
    if not 1 <= args.jobs <= 64:
        raise BAD_JOBS(f"--jobs {args.jobs} is out of range")
    from factory.distributed.payloads import QUEUE

    if not QUEUE.fullmatch(args.task_queue):
        raise BAD_ADDRESS("--task-queue must be 1-128 of [A-Za-z0-9._-]")
    import trio

    from factory.distributed.worker import WorkerConfig, run_until_signalled

    workdir = Path(args.workdir)
    if workdir.exists() and not workdir.is_dir():
        raise BAD_WORKDIR(f"--workdir {args.workdir} exists and is not a folder")

    cfg = WorkerConfig(
        address=check_address(args.temporal),
        task_queue=args.task_queue,
        jobs=args.jobs,
        workdir=Path(args.workdir).absolute(),
        namespace=args.namespace,
        identity=args.identity,
    )
    return trio.run(run_until_signalled, cfg)

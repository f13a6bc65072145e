"""The operator commands' shared wiring: flags that several commands take, the real forge,
terminal, keys and ledger behind an authority, the agent cycle a run spends its grant on,
and the checks of OUT made before anything is written (``factory operator`` and ``factory
publish`` use them; the decisions live in :mod:`factory.operator`).

Heavy imports stay inside the functions: ``factory --help`` imports this module.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from factory.cli.framework import emit_stdout, say

if TYPE_CHECKING:
    from factory.agent.admission import AgentRequest
    from factory.gitio.create import WorktreeSpec
    from factory.operator.forge_client import Forge
    from factory.operator.publication import Precondition
    from factory.operator.session import Prepare, Result
    from factory.operator.tty import Terminal


def common_flags(p: argparse.ArgumentParser, *, forge: bool = True) -> None:
    p.add_argument("--repository", required=True, metavar="OWNER/NAME", help="forge repository")
    if forge:
        p.add_argument(
            "--forge-url",
            metavar="URL",
            help="API root (default https://api.github.com; GitHub Enterprise: .../api/v3)",
        )


def authority_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--private-key", required=True, metavar="P", help="encrypted PKCS#8 PEM")
    p.add_argument("--public-key", required=True, metavar="Q", help="SPKI PEM")
    p.add_argument("--ledger", required=True, metavar="DIR", help="grant ledger folder")
    p.add_argument("--out", required=True, metavar="OUT", help="operator receipt (must not exist)")
    p.add_argument(
        "--ttl-seconds", type=int, default=120, metavar="N", help="grant lifetime, 1..900 (120)"
    )


def gate_flags(p: argparse.ArgumentParser) -> None:
    """``--scenario`` and ``--store``: which gate scenario a publication needs, and where."""
    p.add_argument(
        "--scenario",
        default="publish-candidate",
        metavar="S",
        help="gate scenario: a built-in name or a .toml/.json file (publish-candidate)",
    )
    p.add_argument("--store", metavar="DB", help="gate store (default: STATE/gate.sqlite3)")


def print_json(value: object, *, kept_in: str | None = None) -> None:
    """A document on stdout: its canonical form with hostile code points escaped; at a
    terminal, every string longer than the screen's line cap shortened (the document
    itself, in its file or through a pipe, is whole)."""
    import sys

    from factory.documents.canonical import canonical_bytes
    from factory.documents.emit import inert_bytes

    if sys.stdout is None or not sys.stdout.isatty():
        emit_stdout(inert_bytes(canonical_bytes(value)) + b"\n", kept_in=kept_in)
        return
    shown, cut = _capped(value)
    emit_stdout(inert_bytes(canonical_bytes(shown)) + b"\n", kept_in=kept_in)
    if cut:
        where = f" ({kept_in} holds them whole)" if kept_in else " (pipe the output for them whole)"
        say(f"factory: {cut} long value(s) shortened on this screen{where}")


def _capped(value: object) -> tuple[object, int]:
    """``value`` with every string over the display line cap shortened; how many were."""
    from factory.display import LINE_LIMIT, cap

    count = 0

    def walk(item: object) -> object:
        nonlocal count
        if isinstance(item, str) and len(item) > LINE_LIMIT:
            count += 1
            return cap(item)
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value), count


def forge_of(args: argparse.Namespace, *, token_required: bool = False) -> Forge:
    from factory.operator.forge import (
        DEFAULT_FORGE,
        FORGE_TOKEN_MISSING,
        check_forge_url,
        check_repository,
        find_token,
    )
    from factory.operator.forge_client import Forge

    check_repository(args.repository)
    url = check_forge_url(args.forge_url if args.forge_url is not None else DEFAULT_FORGE)
    token = find_token(url)
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        os.environ.pop(name, None)  # no child process of ours can inherit it
    if token is None and token_required:
        raise FORGE_TOKEN_MISSING(
            "no forge token: set GH_TOKEN (or GITHUB_TOKEN), or log in with 'gh auth login'"
        )
    if token is None:
        say("factory operator: no forge token found; reading the forge anonymously")
    return Forge(url, token)


@contextlib.contextmanager
def term_as_interrupt() -> Iterator[None]:
    """SIGTERM is Ctrl-C; SIGHUP (the terminal hung up) is :class:`HungUp`, which even at a
    prompt ends ``interrupted`` (130) instead of the default death that left the receipt
    ``reserved`` — a spent grant's crash to every reader. A hang-up comes once: after it
    SIGHUP is ignored, so a repeat cannot cut the terminal receipt's write short."""
    from factory.operator.tty import HungUp

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def raise_hung_up(signum: int, frame: object) -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        raise HungUp

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    previous_hup = signal.signal(signal.SIGHUP, raise_hung_up)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGHUP, previous_hup)


def prepare_authority(args: argparse.Namespace) -> Prepare:
    """Admission after the reservation: the terminal, the keys, the ledger."""
    from factory.operator import keys
    from factory.operator.grant import check_ttl
    from factory.operator.ledger import open_ledger
    from factory.operator.session import Authority
    from factory.operator.tty import open_terminal

    def prepare() -> tuple[Terminal, Authority]:
        check_ttl(args.ttl_seconds)
        terminal = open_terminal()
        public = keys.load_public(Path(args.public_key))
        private = keys.read_private(Path(args.private_key))
        ledger = open_ledger(Path(args.ledger))
        return terminal, Authority(private, public, ledger, args.ttl_seconds)

    return prepare


def finish(result: Result, out: Path | None = None) -> int:
    """Print the terminal receipt (escaped; at a terminal, shortened where long: the file
    holds its exact bytes) and the diagnostic. The outcome is decided: a hang-up or
    SIGTERM from here on is ignored (``term_as_interrupt`` restores both on its way out),
    and a terminal that hung up may refuse the bytes — the receipt at ``--out`` holds them."""
    import json

    from factory.errors import FactoryError

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kept = None if out is None else str(out)
    try:
        try:
            value = json.loads(result.data)
        except ValueError:
            emit_stdout(result.data, kept_in=kept)
        else:
            print_json(value, kept_in=kept)
    except FactoryError:
        if result.diagnostic is None or "the terminal hung up" not in result.diagnostic:
            raise
    if result.diagnostic:
        say(result.diagnostic)
    return int(result.exit_code)


def check_out(out: Path, worktree: Path | None, *, to_create: bool = False) -> None:
    """OUT is free, its folder exists, and it lies outside the worktree (``to_create``: the
    folder factory will create, which does not exist yet)."""
    from factory.agent.creating import inside_new_folder
    from factory.fsio import OUTPUT_EXISTS, physically_inside
    from factory.operator.session import OUT_INSIDE_WORKTREE, OUTPUT_FOLDER_MISSING
    from factory.pipeline.publish import export_path

    if worktree is not None and (
        inside_new_folder(out, worktree)
        if to_create
        else worktree.is_dir() and physically_inside(out, worktree)
    ):
        raise OUT_INSIDE_WORKTREE("--out lies inside the worktree")
    if os.path.lexists(out):
        raise OUTPUT_EXISTS("--out already exists")
    if os.path.lexists(export_path(out)):
        raise OUTPUT_EXISTS("the gate export folder beside --out (OUT.gate) already exists")
    if not out.parent.is_dir():
        raise OUTPUT_FOLDER_MISSING("the folder of --out does not exist")


def agent_runner(request: AgentRequest, creation: WorktreeSpec | None = None) -> tuple[int, bytes]:
    """The real agent cycle (``factory agent``'s own execution path and profiles); with a
    ``creation`` (a pinned :class:`~factory.gitio.create.WorktreeSpec`), its creating form."""
    from factory.cli.agent_exec import AgentCall, execute

    call = AgentCall(task=request.task, out=request.receipt, timeout_ms=request.timeout_ms)
    if creation is None:
        call = dataclasses.replace(call, worktree=request.worktree)
    else:
        call = dataclasses.replace(
            call,
            repo=creation.repo,
            base=creation.base,
            worktree_dir=creation.path,
            branch=creation.branch,
        )
    code, data = execute(call)
    return int(code), data


def preflight() -> None:
    """Before any prompt or grant: both provider CLIs could start on the subscription route
    (:mod:`factory.cli.preflight`), so a missing login spends nothing and creates nothing."""
    from factory.cli.agent_exec import load_profiles
    from factory.cli.preflight import preflight as check

    check(*load_profiles(), route="subscription")


def pinned_creation(args: argparse.Namespace) -> WorktreeSpec | None:
    """``--repo``: the worktree to create, decided once (reads only; refusals exit 2)."""
    if args.repo is None:
        return None
    from factory.agent.creating import pinned
    from factory.gitio.create import WorktreeSpec

    dir_ = Path(args.worktree_dir) if args.worktree_dir is not None else None
    return pinned(WorktreeSpec(repo=Path(args.repo), base=args.base, path=dir_, branch=args.branch))


def publish_preconditions() -> Sequence[Precondition]:
    """Checks injected into every publish intent the CLI builds: the decision gate."""
    from factory.operator.publication import require_accepted_gate

    return (require_accepted_gate,)


def gate_store_path(args: argparse.Namespace) -> Path:
    from factory.cli.framework import default_state_dir

    return Path(os.path.abspath(args.store)) if args.store else default_state_dir() / "gate.sqlite3"


def receipt_worktree(path: Path) -> Path | None:
    """The worktree an agent (or operator-run) receipt names, when it can be read."""
    with contextlib.suppress(
        OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError
    ):
        value = json.loads(path.read_bytes())
        if value.get("schema") == "factory.operator-receipt/1":
            path = Path(os.path.abspath(path)).parent / value["agent_run"]["path"]
            value = json.loads(path.read_bytes())
        return Path(value["worktree"])
    return None

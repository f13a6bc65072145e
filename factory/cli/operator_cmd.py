"""``factory operator keygen | plan | run | publish | verify`` (SPEC O-1…O-4).

Thin: parse flags, check what can be checked before anything is written, wire the real
effects (terminal, forge, agent cycle, clock) into :mod:`factory.operator`, print.
There is no flag, variable or file for the passphrase or the typed revision: they come
from the controlling terminal only, so ``--passphrase`` is refused like any unknown flag.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from factory.cli.framework import emit_stdout, say

EXITS = """\
Exit codes: 0 executed, 2 refused before anything was spent (every prompt refusal
included; the receipt names {stage, code}), 4 failed after the grant was spent,
130 interrupted, 1 internal error."""
FORGE_NOTE = """\
The forge token comes from GH_TOKEN or GITHUB_TOKEN, else 'gh auth token'; it is never
printed, stored, or passed to any child process."""
KEYGEN_HELP = """\
Create the operator's Ed25519 key pair: P as an encrypted PKCS#8 PEM (PBES2,
PBKDF2-HMAC-SHA256 600000 iterations, AES-256-CBC), Q as an SPKI PEM. Both are created
exclusively with mode 0600, all or nothing. The passphrase (at least 12 characters) is
asked twice on the terminal, with echo off. stdout: a factory.operator-key/1 JSON object.
"""
PLAN_HELP = f"""\
Read the forge (every page of the open issues carrying the label) and print the single
intent waiting for authority (factory.operator-intent/1, state AWAITING_AUTHORITY, the
lowest-numbered such issue) or state NO_READY_WORK. Nothing is written or authorized.
{FORGE_NOTE}
Exit codes: 0 printed, 2 bad flags, 4 the forge could not be read completely.
"""
RUN_HELP = f"""\
Authorize and run ONE agent cycle on the forge's ready issue. OUT is reserved first; the
forge and the worktree are re-read and the intent re-derived; every field is shown; you
type the full intent revision and your passphrase on this terminal; a short-lived
FACTORY_RUN grant is signed in memory and spent once (ledger entry in DIR); the agent
cycle runs in W with the derived task and its receipt is written beside OUT
(OUT.agent.json). stdin must be a terminal.
Instead of an existing clean linked worktree W, --repo REPO [--base] [--worktree-dir]
[--branch] lets the agent cycle create one, as 'factory agent --repo' does: the base
commit, folder and branch are fixed before the screen (which shows them), and the
worktree is created only after the grant is spent.
{FORGE_NOTE}
{EXITS}
A rejected candidate is still an executed run (0): see agent_run.status.
"""
PUBLISH_HELP = f"""\
Authorize ONE publication of a completed, verified, non-rehearsal agent receipt R (or of
the operator receipt of an 'operator run'): commit the candidate tree on
factory/issue-N-<rev12> (or factory/<rev12>) with the receipt's base commit as parent,
push it with a lease that requires the branch to be absent, and open a pull request (an
identical open one is reused). Never merge. The user's HEAD, index and worktree are not
touched. stdin must be a terminal.
The decision gate must have accepted the candidate first: a run of the scenario
(default: the built-in publish-candidate; --scenario names your own copy) in the gate
store whose accepted head completed it for this exact candidate tree ('factory publish'
makes one); otherwise gate-not-accepted. No flag skips the gate. The run's runpack is
exported beside OUT (OUT.gate/) and bound in the receipt.
{FORGE_NOTE}
{EXITS}
"""
VERIFY_HELP = """\
Check an operator receipt offline: canonical bytes and revision, the intent's revision,
the grant's signature (against --public-key; without it the key recorded in the receipt,
which shows consistency, not authorship) and scope, the ledger entry, the bound agent
receipt, and a publication's commit id. With --deep, the whole chain: the agent
receipt's evidence re-verified, the gate runpack beside OUT re-hashed and replayed (every
accepted evaluation), its head, scenario and candidate tree equal to what the intent
bound, and the review receipt found in it by digest. stdout: JSON. Exit 0 all checks
pass, 4 not.
"""


def _common(p: Any, *, forge: bool = True) -> None:
    p.add_argument("--repository", required=True, metavar="OWNER/NAME", help="forge repository")
    if forge:
        p.add_argument(
            "--forge-url",
            metavar="URL",
            help="API root (default https://api.github.com; GitHub Enterprise: .../api/v3)",
        )


def _authority_flags(p: Any) -> None:
    p.add_argument("--private-key", required=True, metavar="P", help="encrypted PKCS#8 PEM")
    p.add_argument("--public-key", required=True, metavar="Q", help="SPKI PEM")
    p.add_argument("--ledger", required=True, metavar="DIR", help="grant ledger folder")
    p.add_argument("--out", required=True, metavar="OUT", help="operator receipt (must not exist)")
    p.add_argument(
        "--ttl-seconds", type=int, default=120, metavar="N", help="grant lifetime, 1..900 (120)"
    )


def register(sub: Any) -> None:
    group = sub.add_parser(
        "operator", help="a person's single-use grant: run, commit, leased push, pull request"
    )
    ops = group.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    p = ops.add_parser("keygen", help="create the operator key pair", description=KEYGEN_HELP)
    p.add_argument("--private-key", required=True, metavar="P", help="new encrypted PKCS#8 PEM")
    p.add_argument("--public-key", required=True, metavar="Q", help="new SPKI PEM")
    p.set_defaults(handler=keygen)
    p = ops.add_parser("plan", help="print the intent waiting for authority", description=PLAN_HELP)
    _common(p)
    p.add_argument("--label", default="factory", metavar="L", help="issue label (factory)")
    p.set_defaults(handler=plan)
    p = ops.add_parser("run", help="authorize and run one agent cycle", description=RUN_HELP)
    _common(p)
    p.add_argument("--label", default="factory", metavar="L", help="issue label (factory)")
    from factory.cli.agent_cmd import add_worktree_flags

    add_worktree_flags(p)
    _authority_flags(p)
    p.add_argument(
        "--timeout-ms", type=int, default=600_000, metavar="N", help="per provider invocation"
    )
    p.set_defaults(handler=run)
    p = ops.add_parser("publish", help="authorize one publication", description=PUBLISH_HELP)
    p.add_argument("--receipt", required=True, metavar="R", help="agent or operator-run receipt")
    _common(p)
    p.add_argument("--remote", required=True, metavar="NAME", help="git remote to push to")
    p.add_argument("--base", metavar="BRANCH", help="pull request base (default: the forge's)")
    _authority_flags(p)
    gate_flags(p)
    p.add_argument("--gate-run", metavar="RUN", help="the accepted gate run (default: found)")
    p.set_defaults(handler=publish)
    p = ops.add_parser("verify", help="check an operator receipt offline", description=VERIFY_HELP)
    p.add_argument("receipt", metavar="OUT", help="operator receipt")
    p.add_argument("--public-key", metavar="Q", help="the public key the grant must verify with")
    p.add_argument("--ledger", metavar="DIR", help="ledger folder (default: the recorded one)")
    p.add_argument(
        "--deep", action="store_true", help="also re-verify the agent receipt and replay the gate"
    )
    p.set_defaults(handler=verify)


def gate_flags(p: Any) -> None:
    """``--scenario`` and ``--store``: which gate scenario a publication needs, and where."""
    p.add_argument(
        "--scenario",
        default="publish-candidate",
        metavar="S",
        help="gate scenario: a built-in name or a .toml/.json file (publish-candidate)",
    )
    p.add_argument("--store", metavar="DB", help="gate store (default: STATE/gate.sqlite3)")


def _print_json(value: Any) -> None:
    from factory.canonical import canonical_bytes

    emit_stdout(canonical_bytes(value) + b"\n")


def keygen(args: argparse.Namespace) -> int:
    from factory.operator import dialog, keys
    from factory.operator.tty import open_terminal

    pair = keys.KeyPair(Path(args.private_key), Path(args.public_key))
    keys.check_new_paths(pair)
    terminal = open_terminal()
    try:
        terminal.write(
            f"New operator key. The passphrase needs at least {keys.PASSPHRASE_MIN} "
            "characters; it is not shown.\n"
        )
        first = dialog.ask_passphrase(terminal, "New passphrase: ")
        keys.check_passphrase(first)
        second = dialog.ask_passphrase(terminal, "Same passphrase again: ")
        if first != second:
            raise dialog.PASSPHRASE_MISMATCH("the two passphrases differ")
        del second
        terminal.write("Encrypting the key...\n")
        print_ = keys.generate(pair, first)
    finally:
        terminal.close()
    _print_json(
        {
            "schema": "factory.operator-key/1",
            "private_key": os.path.abspath(pair.private),
            "public_key": os.path.abspath(pair.public),
            "fingerprint": print_,
            "kdf": keys.KDF_DESCRIPTION,
        }
    )
    return 0


def _forge(args: argparse.Namespace, *, token_required: bool = False) -> Any:
    from factory.operator.forge import (
        DEFAULT_FORGE,
        FORGE_TOKEN_MISSING,
        Forge,
        check_forge_url,
        check_repository,
        find_token,
    )

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


def plan(args: argparse.Namespace) -> int:
    from factory.operator.forge import check_label, read_forge

    check_label(args.label)
    with _forge(args) as forge:
        intent = read_forge(forge, args.repository, args.label)
    say(f"factory operator plan: {intent.state}")
    _print_json(intent.to_json_value())
    return 0


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _prepare(args: argparse.Namespace) -> Any:
    """Admission after the reservation: the terminal, the keys, the ledger."""
    from factory.operator import keys
    from factory.operator.grant import check_ttl
    from factory.operator.ledger import open_ledger
    from factory.operator.session import Authority
    from factory.operator.tty import open_terminal

    def prepare() -> tuple[Any, Authority]:
        check_ttl(args.ttl_seconds)
        terminal = open_terminal()
        public = keys.load_public(Path(args.public_key))
        private = keys.read_private(Path(args.private_key))
        ledger = open_ledger(Path(args.ledger))
        return terminal, Authority(private, public, ledger, args.ttl_seconds)

    return prepare


def _finish(result: Any) -> int:
    emit_stdout(result.data)
    if result.diagnostic:
        say(result.diagnostic)
    return int(result.exit_code)


def _check_out(out: Path, worktree: Path | None, *, to_create: bool = False) -> None:
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


def agent_runner(request: Any, creation: Any = None) -> tuple[int, bytes]:
    """The real agent cycle (``factory agent``'s own execution path and profiles); with a
    ``creation`` (a pinned :class:`~factory.gitio.create.WorktreeSpec`), its creating form."""
    from factory.cli import agent_cmd

    where: dict[str, str | None] = {"worktree": os.fspath(request.worktree)}
    if creation is not None:
        where = {
            "worktree": None,
            "repo": os.fspath(creation.repo),
            "base": creation.base,
            "worktree_dir": os.fspath(creation.path),
            "branch": creation.branch,
        }
    ns = argparse.Namespace(
        **where,
        task=request.task,
        out=os.fspath(request.receipt),
        evidence=None,
        timeout_ms=request.timeout_ms,
        progress="human",
        otel_endpoint=None,
        rehearsal=None,
    )
    code, data = agent_cmd.execute(ns)
    return int(code), data


def _pinned_creation(args: argparse.Namespace) -> Any:
    """``--repo``: the worktree to create, decided once (reads only; refusals exit 2)."""
    if args.repo is None:
        return None
    from factory.agent.creating import pinned
    from factory.gitio.create import WorktreeSpec

    dir_ = Path(args.worktree_dir) if args.worktree_dir is not None else None
    return pinned(WorktreeSpec(repo=Path(args.repo), base=args.base, path=dir_, branch=args.branch))


def run(args: argparse.Namespace) -> int:
    from factory.agent.admission import AgentRequest
    from factory.cli.agent_cmd import check_worktree_flags
    from factory.operator.forge import check_label
    from factory.operator.run_flow import RunFlow, agent_receipt_path
    from factory.operator.session import operate

    check_label(args.label)
    check_worktree_flags(args)
    out = Path(os.path.abspath(args.out))
    creation = _pinned_creation(args)
    worktree = Path(args.worktree) if creation is None else creation.path
    _check_out(out, worktree, to_create=creation is not None)
    request = AgentRequest(
        worktree=worktree,
        task="(derived from the intent)",
        receipt=agent_receipt_path(out),
        timeout_ms=args.timeout_ms,
    )
    with _forge(args) as forge, _term_as_interrupt():
        flow = RunFlow(forge, args.repository, args.label, request, agent_runner, creation=creation)
        return _finish(operate(out, flow, _prepare(args)))


def publish_preconditions() -> Sequence[Any]:
    """Checks injected into every publish intent the CLI builds: the decision gate."""
    from factory.operator.intent import require_accepted_gate

    return (require_accepted_gate,)


def gate_store_path(args: argparse.Namespace) -> Path:
    from factory.cli.framework import default_state_dir

    return Path(os.path.abspath(args.store)) if args.store else default_state_dir() / "gate.sqlite3"


def _receipt_worktree(path: Path) -> Path | None:
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


def publish(args: argparse.Namespace) -> int:
    from factory.operator.adapter import check_remote_name
    from factory.operator.publish_flow import PublishFlow
    from factory.operator.session import operate

    check_remote_name(args.remote)
    out = Path(os.path.abspath(args.out))
    _check_out(out, _receipt_worktree(Path(args.receipt)))
    from factory.cli.gate_cmd import resolve_scenario
    from factory.pipeline.binding import StoreGate
    from factory.pipeline.publish import export_path

    scenario = resolve_scenario(args.scenario)
    lookup = StoreGate(gate_store_path(args), scenario, run=args.gate_run)
    with _forge(args, token_required=True) as forge, _term_as_interrupt():
        flow = PublishFlow(
            forge,
            args.repository,
            Path(args.receipt),
            args.remote,
            args.base,
            preconditions=publish_preconditions(),
            gate=lookup,
            export_to=export_path(out),
        )
        return _finish(operate(out, flow, _prepare(args)))


def verify(args: argparse.Namespace) -> int:
    from factory.operator.verify import verify_operator_receipt

    report = verify_operator_receipt(
        Path(args.receipt),
        public_key=Path(args.public_key) if args.public_key else None,
        ledger=Path(args.ledger) if args.ledger else None,
    )
    if args.deep:
        from factory.pipeline.deep import verify_chain

        report = verify_chain(Path(args.receipt), report)
    _print_json(report)
    failed = [
        name
        for name in ("grant", "ledger", "agent_receipt", "commit", "intent")
        if not report[name]["ok"]
    ]
    if not report["revision"]["ok"] or not report["canonical_bytes"]:
        failed.insert(0, "revision")
    if "chain" in report and not report["chain"]["ok"]:
        failed += [f"chain: {p}" for p in report["chain"]["problems"]]
    failed += report["consistency_problems"]
    if report["grant"].get("key_anchor") == "receipt-embedded":
        say(
            "factory operator verify: checked against the key recorded in the receipt "
            "(consistency, not authorship); pass --public-key to anchor it"
        )
    if failed:
        say("factory operator verify: failed: " + ", ".join(failed))
        return 4
    return 0

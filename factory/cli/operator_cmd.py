"""``factory operator keygen | plan | run | publish | verify`` (SPEC O-1…O-4).

Thin: parse flags, check what can be checked before anything is written, wire the real
effects (terminal, forge, agent cycle, clock) into :mod:`factory.operator`, print.
There is no flag, variable or file for the passphrase or the typed revision: they come
from the controlling terminal only, so ``--passphrase`` is refused like any unknown flag.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from factory.cli import operator_wiring as wiring
from factory.cli.framework import say

if TYPE_CHECKING:
    from factory.cli.framework import Subcommands

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


def register(sub: Subcommands) -> None:
    group = sub.add_parser(
        "operator", help="a person's single-use grant: run, commit, leased push, pull request"
    )
    ops = group.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    p = ops.add_parser("keygen", help="create the operator key pair", description=KEYGEN_HELP)
    p.add_argument("--private-key", required=True, metavar="P", help="new encrypted PKCS#8 PEM")
    p.add_argument("--public-key", required=True, metavar="Q", help="new SPKI PEM")
    p.set_defaults(handler=keygen)
    p = ops.add_parser("plan", help="print the intent waiting for authority", description=PLAN_HELP)
    wiring.common_flags(p)
    p.add_argument("--label", default="factory", metavar="L", help="issue label (factory)")
    p.set_defaults(handler=plan)
    p = ops.add_parser("run", help="authorize and run one agent cycle", description=RUN_HELP)
    wiring.common_flags(p)
    p.add_argument("--label", default="factory", metavar="L", help="issue label (factory)")
    from factory.cli.agent_cmd import add_worktree_flags

    add_worktree_flags(p)
    wiring.authority_flags(p)
    p.add_argument(
        "--timeout-ms", type=int, default=600_000, metavar="N", help="per provider invocation"
    )
    p.set_defaults(handler=run)
    p = ops.add_parser("publish", help="authorize one publication", description=PUBLISH_HELP)
    p.add_argument("--receipt", required=True, metavar="R", help="agent or operator-run receipt")
    wiring.common_flags(p)
    p.add_argument("--remote", required=True, metavar="NAME", help="git remote to push to")
    p.add_argument("--base", metavar="BRANCH", help="pull request base (default: the forge's)")
    wiring.authority_flags(p)
    wiring.gate_flags(p)
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
    wiring.print_json(
        {
            "schema": "factory.operator-key/1",
            "private_key": os.path.abspath(pair.private),
            "public_key": os.path.abspath(pair.public),
            "fingerprint": print_,
            "kdf": keys.KDF_DESCRIPTION,
        }
    )
    return 0


def plan(args: argparse.Namespace) -> int:
    from factory.operator.forge import check_label
    from factory.operator.forge_client import read_forge

    check_label(args.label)
    with wiring.forge_of(args) as forge:
        intent = read_forge(forge, args.repository, args.label)
    say(f"factory operator plan: {intent.state}")
    wiring.print_json(intent.to_json_value())
    return 0


def run(args: argparse.Namespace) -> int:
    from factory.agent.admission import AgentRequest
    from factory.cli.agent_cmd import check_worktree_flags
    from factory.operator.forge import check_label
    from factory.operator.run_flow import RunFlow, agent_receipt_path
    from factory.operator.session import operate

    check_label(args.label)
    check_worktree_flags(args)
    out = Path(os.path.abspath(args.out))
    creation = wiring.pinned_creation(args)
    if creation is None:
        worktree = Path(args.worktree)
    else:
        assert creation.path is not None  # pinned: the folder is decided
        worktree = creation.path
    wiring.check_out(out, worktree, to_create=creation is not None)
    request = AgentRequest(
        worktree=worktree,
        task="(derived from the intent)",
        receipt=agent_receipt_path(out),
        timeout_ms=args.timeout_ms,
    )
    wiring.preflight()  # a provider that could not start refuses before any prompt or grant
    with wiring.forge_of(args) as forge, wiring.term_as_interrupt():
        flow = RunFlow(
            forge, args.repository, args.label, request, wiring.agent_runner, creation=creation
        )
        return wiring.finish(operate(out, flow, wiring.prepare_authority(args)), out)


def publish(args: argparse.Namespace) -> int:
    from factory.operator.adapter import check_remote_name
    from factory.operator.publish_flow import PublishFlow
    from factory.operator.session import operate

    check_remote_name(args.remote)
    out = Path(os.path.abspath(args.out))
    wiring.check_out(out, wiring.receipt_worktree(Path(args.receipt)))
    from factory.cli.gate_cmd import resolve_scenario
    from factory.pipeline.binding import StoreGate
    from factory.pipeline.publish import export_path

    scenario = resolve_scenario(args.scenario)
    lookup = StoreGate(wiring.gate_store_path(args), scenario, run=args.gate_run)
    with wiring.forge_of(args, token_required=True) as forge, wiring.term_as_interrupt():
        flow = PublishFlow(
            forge,
            args.repository,
            Path(args.receipt),
            args.remote,
            args.base,
            preconditions=wiring.publish_preconditions(),
            gate=lookup,
            export_to=export_path(out),
        )
        return wiring.finish(operate(out, flow, wiring.prepare_authority(args)), out)


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
    wiring.print_json(report)
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

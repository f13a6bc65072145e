"""``factory publish``: agent receipt → decision gate → operator publication (SPEC X-1).

Thin: check the flags, fill the gate run's params from the receipt, wire the gate step
(:mod:`factory.pipeline.gatestep`) as the publish flow's admission and the gate lookup
(:mod:`factory.pipeline.binding`) into it, then the operator's own session does the rest.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from factory.cli import operator_cmd
from factory.cli import operator_wiring as wiring
from factory.cli.framework import say

HELP = f"""\
Take an agent receipt R all the way to a pull request, through the decision gate.

1. The gate: start (or resume) the run of the scenario (default: the built-in
   publish-candidate; 'factory gate scenario show publish-candidate') for this receipt's
   candidate, acquire its evidence stage by stage and accept what it shows:
     agent-approved   the receipt verifies; completed; APPROVE; subscription route; the
                      live worktree still re-derives its candidate
     tests-pass       the --test command, run by factory in the worktree, exits 0 and
                      leaves the candidate tree unchanged
     review-approved  the candidate's risk tier selects no review lens, or
                      'factory review validate --gate pre-pr' allows it
   If it is not complete, the command stops (exit 3, receipt status 'held') and says which
   stages and conditions are not yet true, why, and what to do next.
2. Only once the gate accepted: the operator's publish intent is built from the accepted
   gate head (bound in the intent and the grant), shown, and authorized at this terminal
   as in 'factory operator publish' (type the revision, then the passphrase): one commit,
   a leased push, one pull request; never a merge.

The test command comes last, after '--test --' (argv, never a shell). OUT is reserved
first; the gate run's runpack is exported beside it (OUT.gate/), and
'factory operator verify OUT --deep' checks the whole chain offline.
{operator_cmd.FORGE_NOTE}
Exit codes: 0 published, 2 refused before anything was spent, 3 held by the gate,
4 a gate condition failed (nothing spent) or the publication failed after the grant was
spent, 130 interrupted, 1 internal error.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "publish", help="receipt → decision gate → one authorized pull request", description=HELP
    )
    p.add_argument("--receipt", required=True, metavar="R", help="agent or operator-run receipt")
    wiring.common_flags(p)
    p.add_argument("--remote", required=True, metavar="NAME", help="git remote to push to")
    p.add_argument("--base", metavar="BRANCH", help="pull request base (default: the forge's)")
    wiring.authority_flags(p)
    wiring.gate_flags(p)
    p.add_argument("--test", action="store_true", help="the test command follows after --")
    p.add_argument("argv", nargs="*", metavar="-- ARGV", help="the test command (after --test)")
    p.set_defaults(handler=publish)


def _test_argv(args: argparse.Namespace) -> list[str] | None:
    from factory.errors import USAGE

    if args.argv and not args.test:
        raise USAGE("factory publish: a test command goes after '--test --'")
    if args.test and not args.argv:
        raise USAGE("factory publish: --test needs the command after '--' (--test -- ARGV…)")
    return list(args.argv) or None


def publish(args: argparse.Namespace) -> int:
    from factory.cli.gate_cmd import resolve_scenario
    from factory.operator.adapter import check_remote_name
    from factory.operator.publish_flow import verified_source
    from factory.operator.session import operate
    from factory.pipeline.publish import pipeline_flow

    test_argv = _test_argv(args)
    check_remote_name(args.remote)
    out = Path(os.path.abspath(args.out))
    scenario = resolve_scenario(args.scenario)
    # The one read and verification of the receipt this command makes (issue 25).
    held = verified_source(Path(args.receipt), args.repository)
    wiring.check_out(out, Path(held[1].loaded.receipt.worktree))
    with wiring.forge_of(args, token_required=True) as forge, wiring.term_as_interrupt():
        flow, _ = pipeline_flow(
            forge,
            args.repository,
            Path(args.receipt),
            args.remote,
            out=out,
            scenario=scenario,
            store=wiring.gate_store_path(args),
            test_argv=test_argv,
            base=args.base,
            progress=say,
            preconditions=wiring.publish_preconditions(),
            held=held,
        )
        return wiring.finish(operate(out, flow, wiring.prepare_authority(args)), out)

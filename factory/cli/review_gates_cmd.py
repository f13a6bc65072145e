"""``factory review validate | invalidate | recover | reclaim | repair | install-hooks``
(SPEC R): the gate, recovery and repair commands, registered under ``factory review``.

Thin: flags are parsed here, the work is :mod:`factory.review.gates`,
:mod:`factory.review.recovery`, :mod:`factory.review.repair` and :mod:`factory.review.hooks`.
``validate`` prints one ``factory.review-gate-result/1`` on stdout and one line on stderr
(what was decided and the next command), and exits 0 allow, 3 denial, 2 usage, 4 failure.
The other commands print one JSON object carrying ``next``; a refusal prints
``{"operation", "error", "next"}`` (and ``expected_authorization`` when the refusal is about
the maintainer authorization binding).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from factory.cli.collector import imports_settled
from factory.cli.framework import say
from factory.cli.review_cmd import _emit

GATES = ("pre-commit", "pre-push", "pre-pr", "release")

VALIDATE_HELP = """\
The review check: answer allow or a machine-readable denial for the git boundary GATE,
re-deriving the live target from git (zero model calls):
  pre-commit  the worktree and index (staged files must be the whole candidate)
  pre-push    HEAD's first-parent range (an empty commit is refused)
  pre-pr      the boundary (--base-ref, else the push remote's default branch) to the
              checkout's candidate
  release     exactly HEAD's tree, plus the SHA-256 of each --release-artifact
Without --lineage the unique valid terminal, non-superseded lineage whose candidate is
the live one is used. An allow is decided twice: again under the store lock, and anything
that changed in between answers invalidated. Output: factory.review-gate-result/1.
An allow at pre-commit or pre-push replays the store's facts from the check's memo when
no record changed since the last full validation (--no-memo: validate them all again).
Prints one line (ALLOW, or DENIED with the reason and the next command); the JSON document
only with --json. --from-refs judges with the review mirror fetched by 'review fetch'
(same validation, same decision, the live target from this checkout). The decision gate
('factory gate', 'factory publish') asks this same check in-process (evidence source
review-gate).
Exit 0 allow, 3 denial, 2 usage, 4 failure. Inside the pre-commit framework's pre-push
stage, PRE_COMMIT_TO_REF and PRE_COMMIT_REMOTE_NAME stand for --pushed-commit/--remote.
"""

PUSH_HELP = """\
mirror approved review authority to a remote as refs/factory/review/v1/<lineage>
Each approved lineage (and the predecessors its recovery chain names) becomes one commit
holding its review-state.json, review-receipt.json and the evidence blobs its state binds;
the commit depends on nothing else, so the same lineage is the same commit everywhere. A
ref is created once and never moved: a remote or local ref naming another entry for the
same lineage is refused (review-mirror-conflict). Nothing is ever force-pushed.
"""

FETCH_HELP = """\
import the remote's review mirror refs after validating each with the store's own code
Every remote entry is checked (exact commit shape, only the record, its receipt and the
evidence it binds) and loaded by the same validation as the local store; then, only if
none is invalid (review-mirror-invalid) and none conflicts with a local mirror ref
(review-mirror-conflict), each new ref is created locally. Judge with the mirror through
'factory review validate --gate G --from-refs'.
"""

RECOVER_HELP = """\
Create a successor lineage (generation + 1, fresh budget, reviewing) of the live workspace;
the predecessor's record never changes. scope_changed: the predecessor is approved and the
candidate changed; invalidated: it is invalidated; escalated: it is escalated and
--maintainer-authorization FILE holds exactly (LF line ends):
  factory.review-recovery-authorization/1
  predecessor_lineage=ID
  predecessor_revision=REVISION
  target_identity=IDENTITY OF THE LIVE CANDIDATE
  actor=NAME
  reason=TEXT
(a refusal prints the expected text as expected_authorization). A second successor of the
same predecessor (a fork) is refused.
"""

REPAIR_HELP = """\
Quarantine one lineage that fails today's validation, byte for byte, in two phases, with an
audit record — only when every other anomaly of CLASS in the store is named with
--also-invalid (none when it is the only one), and only with the maintainer authorization
binding (the refusal prints the expected text). Validation is
never relaxed: the quarantined record still fails it. Classes: incomplete-entry,
invalid-record, invalid-receipt, invalid-recovery-edge.
"""


def _cwd(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", default=".", metavar="DIR", help="a folder of the repository")


def register(rsub: Any) -> None:
    """Add the gate, recovery and repair commands to ``factory review``'s subparsers."""
    v = rsub.add_parser(
        "validate", help="allow or deny at a git boundary", description=VALIDATE_HELP
    )
    v.add_argument("--gate", required=True, choices=GATES)
    _cwd(v)
    v.add_argument("--lineage", metavar="ID", help="judge this lineage (default: discovery)")
    v.add_argument("--base-ref", metavar="REF", help="pre-pr: the boundary commit")
    v.add_argument(
        "--release-artifact",
        action="append",
        default=[],
        metavar="FILE",
        help="release: an artifact to bind by SHA-256 (repeatable)",
    )
    v.add_argument("--remote", metavar="NAME", help="pre-push: the remote pushed to")
    v.add_argument(
        "--pushed-commit",
        action="append",
        default=[],
        metavar="SHA",
        help="pre-push: a commit the push sends (repeatable; must be HEAD)",
    )
    v.add_argument(
        "--no-memo",
        action="store_true",
        help="validate every record of the store again instead of replaying the gate memo",
    )
    v.add_argument(
        "--from-refs",
        action="store_true",
        help="judge with the review mirror (refs/factory/review/v1/*, see 'review fetch') "
        "instead of the local store",
    )
    v.add_argument(
        "--json", action="store_true", help="print the factory.review-gate-result/1 document"
    )
    v.set_defaults(handler=run_validate)
    for verb, text in (("push", PUSH_HELP), ("fetch", FETCH_HELP)):
        m = rsub.add_parser(verb, help=text.splitlines()[0], description=text)
        _cwd(m)
        m.add_argument(
            "--remote",
            metavar="NAME",
            help="default: the remote git uses for the current branch (its push remote for push), "
            "else origin",
        )
        m.set_defaults(handler=run_mirror, verb=verb)
    i = rsub.add_parser("invalidate", help="stop a pristine reviewing lineage as invalidated")
    _cwd(i)
    i.add_argument("--lineage", required=True, metavar="ID")
    i.add_argument("--expected-revision", required=True, metavar="R")
    i.add_argument("--reason", required=True, metavar="TEXT")
    i.set_defaults(handler=run_invalidate)
    r = rsub.add_parser(
        "recover",
        help="a successor lineage for the live workspace",
        description=RECOVER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _cwd(r)
    r.add_argument("--predecessor-lineage", required=True, metavar="ID")
    r.add_argument("--expected-predecessor-revision", required=True, metavar="R")
    r.add_argument(
        "--disposition", required=True, choices=("scope_changed", "invalidated", "escalated")
    )
    r.add_argument("--reason", required=True, metavar="TEXT")
    r.add_argument("--actor", required=True, metavar="NAME")
    r.add_argument("--maintainer-authorization", metavar="FILE")
    r.set_defaults(handler=run_recover)
    c = rsub.add_parser("reclaim", help="quarantine a lineage folder left without its record")
    _cwd(c)
    c.add_argument("--lineage", required=True, metavar="ID")
    c.add_argument("--reason", required=True, metavar="TEXT")
    c.add_argument("--actor", required=True, metavar="NAME")
    c.set_defaults(handler=run_reclaim)
    p = rsub.add_parser(
        "repair", help="the repair ceremony for one invalid record", description=REPAIR_HELP
    )
    _cwd(p)
    p.add_argument("--lineage", required=True, metavar="ID")
    p.add_argument(
        "--class",
        dest="anomaly_class",
        required=True,
        choices=("incomplete-entry", "invalid-record", "invalid-receipt", "invalid-recovery-edge"),
    )
    p.add_argument(
        "--also-invalid",
        action="append",
        default=[],
        metavar="KEY",
        help="every other anomaly of the class (repeatable; the refusal names them)",
    )
    p.add_argument("--reason", required=True, metavar="TEXT")
    p.add_argument("--actor", required=True, metavar="NAME")
    p.add_argument("--maintainer-authorization", metavar="FILE")
    p.set_defaults(handler=run_repair)
    h = rsub.add_parser("install-hooks", help="plain git pre-commit and pre-push hooks")
    _cwd(h)
    h.add_argument("--uninstall", action="store_true", help="remove the hooks factory installed")
    h.set_defaults(handler=run_install_hooks)


def _request(args: argparse.Namespace) -> Any:
    from factory.review.gate_errors import GATE_USAGE
    from factory.review.gates.live import GateRequest
    from factory.review.names import valid_lineage

    if args.lineage is not None and not valid_lineage(args.lineage):
        raise GATE_USAGE(f"--lineage {args.lineage[:80]!r} is not a lineage id")
    if args.base_ref is not None and args.gate != "pre-pr":
        raise GATE_USAGE("--base-ref is only for --gate pre-pr")
    if args.release_artifact and args.gate != "release":
        raise GATE_USAGE("--release-artifact is only for --gate release")
    if (args.remote or args.pushed_commit) and args.gate != "pre-push":
        raise GATE_USAGE("--remote and --pushed-commit are only for --gate pre-push")
    env = dict(os.environ)
    remote, pushed = args.remote, tuple(args.pushed_commit)
    if args.gate == "pre-push" and not pushed and env.get("PRE_COMMIT_TO_REF"):
        pushed = (env["PRE_COMMIT_TO_REF"],)
        remote = remote or env.get("PRE_COMMIT_REMOTE_NAME") or None
    return GateRequest(
        gate=args.gate,
        lineage=args.lineage,
        base_ref=args.base_ref,
        artifacts=tuple(Path(a) for a in args.release_artifact),
        remote=remote,
        pushed=pushed,
        env={k: v for k, v in env.items() if k == "GIT_INDEX_FILE"},
    )


def run_validate(args: argparse.Namespace) -> int:
    from factory.display import inert
    from factory.errors import ExitCode

    req = _request(args)
    source = ""
    if args.from_refs:
        from factory.review.mirror.fromrefs import validate_from_refs

        result, read, bad = validate_from_refs(Path(args.cwd), req)
        doc = result.to_json_value()
        source = f" (authority: the review mirror, {read} ref(s), {bad} not mirror entries)"
    else:
        from factory.review.gates.validate import check

        with imports_settled():  # the full path imports the review models
            answer = check(Path(args.cwd), req, use_memo=not args.no_memo)
        doc = answer.doc
        if answer.replayed:
            source = " (store facts replayed from the gate memo of these exact records)"
    if args.json:
        _emit(doc)
    if doc["allowed"]:
        say(f"factory review: ALLOW at {args.gate}: {inert(doc['reason'], limit=400)}{source}")
        return int(ExitCode.OK)
    denial = doc["denial"]
    say(
        f"factory review: DENIED at {args.gate} ({doc['result']}, "
        f"{denial['stage']}/{denial['code']}): {inert(doc['reason'], limit=600)}{source}"
    )
    return int(ExitCode.REJECTED)


def run_mirror(args: argparse.Namespace) -> int:
    from factory.review.mirror import sync

    work = sync.push if args.verb == "push" else sync.fetch
    return _json(f"review/{args.verb}", lambda: work(Path(args.cwd), args.remote), args.cwd)


def _json(operation: str, work: Callable[[], dict[str, Any]], cwd: str | None = None) -> int:
    from factory.cli.review_cmd import _guard

    def body() -> int:
        _emit(work())
        return 0

    return _guard(operation, body, cwd)


def _auth(args: argparse.Namespace) -> Path | None:
    return Path(args.maintainer_authorization) if args.maintainer_authorization else None


def run_invalidate(args: argparse.Namespace) -> int:
    from factory.review.recovery import invalidate

    return _json(
        "review/invalidate",
        lambda: invalidate(Path(args.cwd), args.lineage, args.expected_revision, args.reason),
        args.cwd,
    )


def run_recover(args: argparse.Namespace) -> int:
    from factory.review.recovery import recover

    return _json(
        "review/recover",
        lambda: recover(
            Path(args.cwd),
            predecessor=args.predecessor_lineage,
            expected_revision=args.expected_predecessor_revision,
            disposition=args.disposition,
            reason=args.reason,
            actor=args.actor,
            authorization=_auth(args),
        ),
        args.cwd,
    )


def run_reclaim(args: argparse.Namespace) -> int:
    from factory.review.repair import reclaim

    return _json(
        "review/reclaim",
        lambda: reclaim(Path(args.cwd), args.lineage, args.reason, args.actor),
        args.cwd,
    )


def run_repair(args: argparse.Namespace) -> int:
    from factory.review.repair import repair

    return _json(
        "review/repair",
        lambda: repair(
            Path(args.cwd),
            args.lineage,
            args.anomaly_class,
            args.reason,
            args.actor,
            _auth(args),
            tuple(args.also_invalid),
        ),
        args.cwd,
    )


def run_install_hooks(args: argparse.Namespace) -> int:
    from factory.gitio.discover import discover
    from factory.review import hooks

    def work() -> dict[str, Any]:
        wt = discover(Path(args.cwd))
        report = hooks.uninstall(wt) if args.uninstall else hooks.install(wt)
        for h in report["hooks"]:
            if h["action"] == "left-alone":
                say(f"factory review: left {h['path']} alone ({h['reason']})")
        return report

    return _json("review/install-hooks", work)

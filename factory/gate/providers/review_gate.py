"""``review-gate``: the result of ``factory review validate --gate G`` (issue 13).

Arguments: ``gate`` (pre-commit, pre-push, pre-pr or release) and ``repo`` (where the
review transaction lives). The provider runs an injected *runner* that returns the
command's stdout bytes and exit code; the default runner starts
``python -I -m factory review validate --gate G --json`` in ``repo`` under the project's
supervision (isolated: the repository's own folder is never on the module path).
The output must be one ``factory.review-gate-result/1`` object with exactly the fields
``schema, result, allowed, action, reason, denial, context``: ``result`` is one of allow,
scope-changed, invalidated, escalated; ``allowed`` is a boolean that must agree with
``result == "allow"``; ``denial`` is null or ``{stage, code}``. Anything else is an
operational failure (``observation-unparsable``), never an allow.

The scope is the tree the gate derived as its live target (``context.live.candidate_tree``)
when the result names one — so a policy can demand that the review allowed *this*
candidate tree — and the repository folder otherwise. The exact stdout is kept as the
``review-gate-result`` artefact (content-addressed), which is where the pipeline finds
the review receipt the gate relied on (``context.receipt``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from factory.documents.reading import JsonRefused, read_json
from factory.gate.providers import Observed, operational
from factory.proc.env import pick
from factory.proc.runner import ProcessFailure, RunSpec, run
from factory.selfexec import factory_argv

RESULT_SCHEMA = "factory.review-gate-result/1"
RESULTS = ("allow", "scope-changed", "invalidated", "escalated")
HEX = frozenset("0123456789abcdef")
FIELDS = {"schema", "result", "allowed", "action", "reason", "denial", "context"}
Runner = Callable[[str, Path], Awaitable[tuple[int, bytes]]]


async def default_runner(gate: str, repo: Path) -> tuple[int, bytes]:
    """``factory review validate --gate GATE`` in ``repo``; returns (exit code, stdout)."""
    spec = RunSpec(
        argv=factory_argv("review", "validate", "--gate", gate, "--json"),
        env=pick(os.environ), cwd=repo, timeout_s=300.0,
    )  # fmt: skip
    result = await run(spec)
    return result.exit_code, result.stdout


def parse_result(stdout: bytes) -> dict[str, Any]:
    """The strict ``factory.review-gate-result/1`` object, or ``ValueError`` saying why."""
    try:
        doc = read_json(stdout, limit=1 << 20, decimals=True, lone_surrogates=True)
    except JsonRefused as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != FIELDS or doc["schema"] != RESULT_SCHEMA:
        raise ValueError(f"not a {RESULT_SCHEMA} object with exactly its fields")
    if doc["result"] not in RESULTS or type(doc["allowed"]) is not bool:
        raise ValueError("result or allowed is not one of the documented values")
    if doc["allowed"] != (doc["result"] == "allow"):
        raise ValueError("allowed contradicts result")
    denial = doc["denial"]
    if denial is not None and not (
        isinstance(denial, dict) and set(denial) == {"stage", "code"}
        and all(isinstance(v, str) for v in denial.values())
    ):  # fmt: skip
        raise ValueError("denial is neither null nor {stage, code}")
    if doc["allowed"] and denial is not None:
        raise ValueError("an allow carries a denial")
    for key in ("action", "reason"):
        if doc[key] is not None and not isinstance(doc[key], str):
            raise ValueError(f"{key} is not a string")
    return doc


def live_tree(doc: Mapping[str, Any]) -> str | None:
    """``context.live.candidate_tree`` when the result carries a 40/64-hex tree id."""
    context = doc.get("context")
    live = context.get("live") if isinstance(context, dict) else None
    tree = live.get("candidate_tree") if isinstance(live, dict) else None
    ok = isinstance(tree, str) and len(tree) in (40, 64) and all(c in HEX for c in tree)
    return tree if ok else None


def make(runner: Runner = default_runner) -> Callable[[Mapping[str, Any]], Awaitable[Observed]]:
    async def acquire(args: Mapping[str, Any]) -> Observed:
        repo = Path(args["repo"])
        try:
            code, stdout = await runner(str(args["gate"]), repo)
        except ProcessFailure as exc:
            return operational(
                "provider-timeout" if exc.code == "timeout" else "provider-crashed", exc.fact
            )
        except OSError as exc:
            return operational(
                "provider-unavailable", f"the review gate could not run ({exc.strerror})"
            )
        try:
            doc = parse_result(stdout)
        except ValueError as exc:
            return operational("observation-unparsable", f"review gate exit {code}: {exc}")
        artefacts = (("review-gate-result", stdout),)
        tree = live_tree(doc)
        if tree is not None:
            return Observed(doc, scope_kind="tree", scope_value=tree, artefacts=artefacts)
        return Observed(
            doc,
            scope_kind="repository",
            scope_value=os.fspath(repo.resolve()),
            artefacts=artefacts,
        )

    return acquire

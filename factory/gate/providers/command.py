"""``command``: run an argv under the project's supervision in a linked worktree.

Arguments: ``argv`` (a list; never a shell) or ``argv_json`` (a JSON array of strings,
e.g. a run parameter holding the user's test command), ``cwd`` (the worktree's top folder),
``timeout_s`` (default 600), ``env`` (extra variable names allowed through besides the base
allow-list). The worktree's candidate tree (untracked files included, through a temporary
index) is measured before and after: the scope is the tree before, and a run that changed
it is marked ``mutated`` — such evidence is insufficient for every policy.

The observation is ``{exit_code, duration_ms, stdout_sha256, stdout_bytes,
stdout_truncated, stderr_sha256, stderr_bytes, stderr_truncated}``; the output bytes are
stored content-addressed as artefacts, never inside the observation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factory.documents.canonical import sha256_hex
from factory.errors import FactoryError
from factory.gate.providers import Observed, operational
from factory.gitio.worktree import candidate_tree, head_commit, locate
from factory.proc.env import BASE_ALLOW, pick
from factory.proc.runner import ProcessFailure, RunSpec, run

DEFAULT_TIMEOUT_S = 600
CAP = 4 << 20
_FAILURES = {
    "timeout": "provider-timeout",
    "output-limit": "provider-output-limit",
    "launch-failed": "provider-unavailable",
    "sweep-incomplete": "provider-crashed",
}


def _tree(root: Path) -> str:
    wt = locate(root)
    base = head_commit(wt)
    return candidate_tree(wt, base or "HEAD")


def _argv(args: Mapping[str, Any]) -> list[str] | None:
    if "argv" in args:
        return list(args["argv"])
    try:
        value = json.loads(str(args["argv_json"]))
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return None
    return value


async def acquire(args: Mapping[str, Any]) -> Observed:
    cwd = Path(args["cwd"])
    argv = _argv(args)
    if argv is None:
        return operational("provider-refused", "argv_json is not a non-empty JSON array of strings")
    try:
        before = _tree(cwd)
    except FactoryError as exc:
        return operational("provider-refused", f"cwd is not a usable linked worktree ({exc.code})")
    env = pick(os.environ, (*BASE_ALLOW, *args.get("env", [])))
    spec = RunSpec(
        argv=argv, env=env, cwd=cwd,
        timeout_s=float(args.get("timeout_s", DEFAULT_TIMEOUT_S)),
        stdout_cap=CAP, stderr_cap=CAP,
    )  # fmt: skip
    try:
        result = await run(spec)
    except ProcessFailure as exc:
        return operational(_FAILURES.get(exc.code, "provider-crashed"), exc.fact)
    try:
        after = _tree(cwd)
    except FactoryError as exc:
        return operational(
            "provider-crashed", f"the worktree could not be re-measured ({exc.code})"
        )
    document = {
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "stdout_sha256": sha256_hex(result.stdout),
        "stdout_bytes": len(result.stdout),
        "stdout_truncated": result.stdout_truncated,
        "stderr_sha256": sha256_hex(result.stderr),
        "stderr_bytes": len(result.stderr),
        "stderr_truncated": result.stderr_truncated,
        "tree_before": before,
        "tree_after": after,
    }
    return Observed(
        document, scope_kind="tree", scope_value=before, mutated=before != after,
        artefacts=(("stdout", result.stdout), ("stderr", result.stderr)),
    )  # fmt: skip

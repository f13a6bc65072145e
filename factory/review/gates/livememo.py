"""The last confirmed pre-commit target of a checkout, kept for the next hook's first pass.

A gate decides twice: on a derivation of the live target, then on a fresh one under the
store lock, and answers only if both are the same. At ``pre-commit`` one derivation of a
10,000-file checkout is most of the hook's time. When the previous gate of this checkout
ended in a confirmed allow, its target (:class:`~factory.review.gates.decide.Live`) is
kept in ``<git-dir>/factory/gate-live.json`` with how it was derived (the fast
candidate's witness, the staged index's digest); the next gate may use it as its *first*
pass. The second pass, under the lock, derives the target from git again, reusing the
kept candidate only when its witness still holds (the same configuration, attributes
files, index bytes, ``git status`` output, and each changed file's mode and bytes —
:func:`~factory.review.gates.fastpath.fast_candidate`), and the answer stands only if it
equals the kept target — so a kept target that no longer holds costs a fallback, never a
wrong allow.

Written without fsync (a cache: a torn or missing file is a miss), with a digest of its own
body and the code identity of :func:`factory.review.gates.memo.code_identity`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Final

from factory.fsio import atomic_replace
from factory.gitio.worktree import Worktree
from factory.review.gates.decide import Live
from factory.review.gates.fastpath import FastCandidate
from factory.review.gates.live import Derived, ancestry_check
from factory.review.gates.memo import code_identity

LIVE_SCHEMA: Final = "factory.review-gate-live/1"
_FIELDS: Final = ("natural_base", "candidate_tree", "paths", "head_commit", "staged_tree")


def _path(wt: Worktree) -> str:
    return os.path.join(wt.git_dir, "factory", "gate-live.json")


def _digest(body: dict[str, Any]) -> str:
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(b"factory.review-gate-live/1\0" + raw).hexdigest()


def save(wt: Worktree, derived: Derived) -> None:
    """Keep ``derived`` (a pre-commit target confirmed by two equal passes) for the next
    gate of this checkout. Failing to write is ignored."""
    lv = derived.live
    if lv.gate != "pre-commit" or lv.problem is not None or lv.natural_base is None:
        return
    fast = derived.fast
    body = {
        "root": str(wt.root),
        "code": code_identity(),
        **{name: getattr(lv, name) for name in _FIELDS},
        "paths": list(lv.paths),
        "staged": list(derived.staged) if derived.staged is not None else None,
        "fast": None,
    }
    if fast is not None:
        body["fast"] = {
            "tree": fast.tree,
            "paths": list(fast.paths),
            "base_tree": fast.base_tree,
            "witness": fast.witness,
            "hashed": [p.hex() for p in fast.hashed],
            "oids": list(fast.oids),
            "modes": list(fast.modes),
        }
    data = json.dumps({"schema": LIVE_SCHEMA, "digest": _digest(body), "body": body}).encode()
    path = Path(_path(wt))
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        atomic_replace(path, data, mode=0o600, durable=False)
    except OSError:
        return


def restore(wt: Worktree) -> Derived | None:
    """The kept pre-commit target of this checkout, or None (none, torn, another checkout,
    other code)."""
    try:
        fd = os.open(_path(wt), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            doc = json.loads(os.read(fd, 64 << 20))
        finally:
            os.close(fd)
        body = doc["body"]
        if doc["schema"] != LIVE_SCHEMA or doc["digest"] != _digest(body):
            return None
        if body["root"] != str(wt.root) or body["code"] != code_identity():
            return None
        base = str(body["natural_base"])
        live = Live(
            gate="pre-commit",
            kind="current-changes",
            natural_base=base,
            candidate_tree=str(body["candidate_tree"]),
            paths=tuple(str(p) for p in body["paths"]),
            head_commit=body["head_commit"],
            head_tree=base,
            staged_tree=body["staged_tree"],
            delivery=(),
            problem=None,
        )
        fast = _fast(body["fast"])
        staged = body["staged"]
        pair = (staged[0], str(staged[1])) if staged is not None else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None
    return Derived(live, ancestry_check(wt, "pre-commit", base), fast=fast, staged=pair)


def _fast(doc: dict[str, Any] | None) -> FastCandidate | None:
    if doc is None:
        return None
    return FastCandidate(
        tree=str(doc["tree"]),
        paths=tuple(str(p) for p in doc["paths"]),
        base_tree=str(doc["base_tree"]),
        witness=str(doc["witness"]),
        hashed=tuple(bytes.fromhex(p) for p in doc["hashed"]),
        oids=tuple(str(o) for o in doc["oids"]),
        modes=tuple(str(m) for m in doc["modes"]),
    )

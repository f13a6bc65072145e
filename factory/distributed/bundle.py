"""A run's result as a git object: the receipt, the evidence it binds and the candidate,
pushed under ``refs/factory/runs/<task>/<revision>`` and fetched back by the coordinator.

The bundle commit's tree holds ``receipt.json``, ``receipt.json.evidence/`` (exactly the
files the receipt names) and ``candidate`` (the judged candidate tree, when there is one).
Its parent is the candidate committed on its base (or the base itself), with a pinned
author, committer and date, so the same receipt always makes the same commit: the ref is
content-addressed twice, by the receipt revision in its name and by the object id.

Refs in this namespace are created, never moved: a push is leased on the ref being absent,
and a ref that already names another commit is a conflict, never overwritten. Every remote
call names its remote by URL, with the upload and receive programs fixed, in repositories
factory made itself, so no repository setting chooses a program or an address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from factory.agent.verify import all_evidence, load_receipt
from factory.errors import IntegrityFailure, Refused
from factory.gitio.run import run_git, try_git

RUNS_NAMESPACE = "refs/factory/runs"
RECEIPT_NAME = "receipt.json"
EVIDENCE_DIR = RECEIPT_NAME + ".evidence"
CANDIDATE_DIR = "candidate"
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
PINNED = {
    "GIT_AUTHOR_NAME": "factory",
    "GIT_AUTHOR_EMAIL": "factory@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "factory",
    "GIT_COMMITTER_EMAIL": "factory@localhost",
    "GIT_COMMITTER_DATE": "@0 +0000",
}
REMOTE_SAFETY = (
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "credential.helper=",
    "-c",
    "core.askPass=",
    "-c",
    "core.sshCommand=ssh",
)


class BundleRefused(Refused):
    """A bundle that cannot be made or pushed as asked (nothing was pushed)."""


class BundleInvalid(IntegrityFailure):
    """A fetched bundle that is not what a worker may push (exit 4)."""


BUNDLE_CONFLICT = BundleRefused.define(
    "bundle-conflict",
    "a run ref is never moved: look at the ref that is there (git ls-remote) and rerun the task",
)
BUNDLE_UNREADABLE = BundleRefused.define(
    "bundle-unreadable", "rerun the task; its receipt or evidence could not be read"
)
BUNDLE_INVALID = BundleInvalid.define(
    "bundle-invalid", "the worker's bundle is not a factory run result: the task failed"
)
BUNDLE_MISSING = BundleInvalid.define(
    "bundle-missing", "the worker named a ref the remote does not have: the task failed"
)


@dataclass(frozen=True, slots=True)
class Bundle:
    """A bundle commit and the ref it belongs under."""

    commit: str
    ref: str
    revision: str


def bundle_ref(task_id: str, revision: str) -> str:
    """``refs/factory/runs/<task>/<hex>`` for a ``sha256:<hex>`` revision."""
    algo, _, hexpart = revision.partition(":")
    if algo != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", hexpart):
        raise BUNDLE_UNREADABLE("the receipt has no sha256 revision")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", task_id) or ".." in task_id:
        raise BUNDLE_UNREADABLE("the task id cannot be part of a ref name")
    return f"{RUNS_NAMESPACE}/{task_id}/{hexpart}"


def _hash_blob(repo: Path, path: Path) -> str:
    out = run_git(
        repo, ["hash-object", "-w", "--no-filters", "--", str(path)], what="git hash-object"
    )
    return out.decode("ascii").strip()


def _mktree(repo: Path, entries: list[tuple[str, str, str, str]]) -> str:
    """A tree of (mode, type, oid, name) entries, written with ``git mktree``."""
    text = "".join(f"{m} {t} {o}\t{n}\0" for m, t, o, n in sorted(entries, key=lambda e: e[3]))
    out = run_git(repo, ["mktree", "-z"], stdin=text.encode("utf-8"), what="git mktree")
    return out.decode("ascii").strip()


def _object_type(repo: Path, oid: str) -> str | None:
    code, out = try_git(repo, ["cat-file", "-t", oid])
    return out.decode("ascii", "replace").strip() if code == 0 else None


def _commit(repo: Path, tree: str, parent: str | None, message: str) -> str:
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]
    return run_git(repo, args, env_extra=PINNED, what="git commit-tree").decode().strip()


def make_bundle(repo: Path, receipt_path: Path, task_id: str) -> Bundle:
    """Write the bundle commit for the receipt at ``receipt_path`` into ``repo``'s objects.

    The receipt must be named :data:`RECEIPT_NAME` with its evidence beside it.
    """
    if receipt_path.name != RECEIPT_NAME:
        raise BUNDLE_UNREADABLE(f"the receipt must be named {RECEIPT_NAME}")
    receipt, _ = load_receipt(receipt_path)
    if receipt.revision is None:
        raise BUNDLE_UNREADABLE("the receipt is not closed (no revision)")
    evidence: list[tuple[str, str, str, str]] = []
    for ref in all_evidence(receipt):
        folder, _, name = ref.path.partition("/")
        if folder != EVIDENCE_DIR or not _NAME.fullmatch(name):
            raise BUNDLE_UNREADABLE("an evidence path is not inside the receipt's folder")
        entry = ("100644", "blob", _hash_blob(repo, receipt_path.parent / ref.path), name)
        if entry not in evidence:
            evidence.append(entry)
    top = [("100644", "blob", _hash_blob(repo, receipt_path), RECEIPT_NAME)]
    if evidence:
        top.append(("040000", "tree", _mktree(repo, evidence), EVIDENCE_DIR))
    base = receipt.base.commit if receipt.base is not None else None
    parent = base if base and _object_type(repo, base) == "commit" else None
    final = receipt.final_candidate()
    tree = final.body.candidate_tree if final is not None else None
    if tree is not None and _object_type(repo, tree) == "tree":
        top.append(("040000", "tree", tree, CANDIDATE_DIR))
        parent = _commit(repo, tree, parent, f"factory candidate of task {task_id}")
    message = f"factory run of task {task_id}\n\nreceipt revision {receipt.revision}\n"
    commit = _commit(repo, _mktree(repo, top), parent, message)
    return Bundle(
        commit=commit, ref=bundle_ref(task_id, receipt.revision), revision=receipt.revision
    )


def remote_ref(repo: Path, url: str, ref: str) -> str | None:
    """The commit ``ref`` names at ``url``, or None (read-only)."""
    args = [*REMOTE_SAFETY, "ls-remote", "--upload-pack=git-upload-pack", "--refs", url, ref]
    out = run_git(repo, args, what="git ls-remote")
    for line in out.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition("\t")
        if name == ref and _OID.fullmatch(oid):
            return oid
    return None


def push_bundle(repo: Path, url: str, bundle: Bundle) -> Literal["pushed", "reused"]:
    """Create ``bundle.ref`` at ``url``; ``reused`` when it already names the same commit.

    Raises:
        BundleRefused: ``bundle-conflict`` when the ref names another commit.
    """
    before = remote_ref(repo, url, bundle.ref)
    if before == bundle.commit:
        return "reused"
    if before is not None:
        raise BUNDLE_CONFLICT(f"{bundle.ref} names another commit at the remote")
    args = [
        *REMOTE_SAFETY,
        "push",
        "--porcelain",
        "--no-verify",
        "--no-recurse-submodules",
        "--no-follow-tags",
        "--receive-pack=git-receive-pack",
        f"--force-with-lease={bundle.ref}:",
        url,
        f"{bundle.commit}:{bundle.ref}",
    ]
    try_git(repo, args)
    after = remote_ref(repo, url, bundle.ref)
    if after == bundle.commit:
        return "pushed"
    raise BUNDLE_CONFLICT(
        f"{bundle.ref} names another commit at the remote"
        if after
        else "the remote refused the run ref"
    )

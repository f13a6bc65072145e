"""The publication adapter: exactly three capabilities, plus read-only observation (SPEC O-4).

1. **Commit.** The commit object is written from bytes this module builds: ``tree`` is the
   receipt's candidate tree, ``parent`` the receipt's base commit, author and committer and
   their date and the message come from the intent. Nothing is re-added, so no filter,
   conversion or hook can change what is published, and the same intent always yields the
   same commit id (shown to the operator before the prompt). The branch
   ``refs/heads/<B>`` is created only if absent (or reused when it already names that
   commit). The user's HEAD, index and worktree are never touched.
2. **Push.** ``git push --force-with-lease=refs/heads/B: REMOTE <oid>:refs/heads/B``: the
   lease with an empty expected value means "the branch must not exist"; a branch that
   already points at the commit is reused without pushing. The remote is re-read after the
   push and must name the commit.
3. **Pull request.** Through the forge's REST API: none for the head → create; exactly one
   open, identical one → reuse; anything else → refuse.

There is no merge: no function here or anywhere in factory merges a branch or a pull
request, and a scope test keeps it that way.

Every git call goes through :func:`factory.gitio.run.run_git` (argv only, allow-listed
environment) with hooks pointed at ``/dev/null`` and the transport programs a repository's
config could name pinned to git's own, so no repository-configured program runs.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from factory.errors import Failure, Refused
from factory.gitio.run import run_git, try_git
from factory.operator.forge import PullRequest
from factory.operator.forge_client import Forge
from factory.operator.intent import CommitPlan, PublishIntent

ZERO_OID: Final = "0" * 40
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_SSH: Final = "ssh"
_REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class AdapterRefused(Refused):
    """Observation says publishing would not be safe; nothing was spent (exit 2)."""


class AdapterFailure(Failure):
    """A publication step failed after the grant was spent (exit 4)."""


_ref = AdapterRefused.define
_NOT_PUBLISHED = "nothing was published; resolve it, then authorize again"
BRANCH_EXISTS = _ref("branch-exists", "pick another receipt or delete that remote branch first")
CANDIDATE_OBJECTS_MISSING = _ref(
    "candidate-objects-missing", "run the agent again in this repository"
)
GIT_IDENTITY_INVALID = _ref("git-identity-invalid", "set a plain user.name and user.email")
GIT_IDENTITY_MISSING = _ref("git-identity-missing", "set it with git config, then retry")
LOCAL_BRANCH_EXISTS = _ref(
    "local-branch-exists", "delete that local branch (git branch -D) or keep it and stop"
)
PULL_REQUEST_EXISTS = _ref(
    "pull-request-exists", "close or rename that pull request's branch, then retry"
)
REMOTE_INVALID = _ref("remote-invalid", "pass the name of a configured git remote (e.g. origin)")
REMOTE_MISSING = _ref("remote-missing", "see 'git remote -v' and pass one of those names")
REMOTE_UNREACHABLE = _ref(
    "remote-unreachable", "check --remote, the network and your git credentials"
)
REMOTE_STEERED = _ref(
    "remote-config-steers",
    "remove those keys from the repository's config (git config --local --unset-all KEY);"
    " set credential helpers and proxies in your own ~/.gitconfig, where factory honours them",
)
WORKTREE_GONE = _ref("worktree-gone", _NOT_PUBLISHED)
_fail = AdapterFailure.define
_SPENT = "the grant is spent: see design/operator.md (residuals) to recover"
COMMIT_FAILED = _fail("commit-failed", _SPENT)
COMMIT_MISMATCH = _fail("commit-mismatch", _SPENT)
PULL_REQUEST_UNEXPECTED = _fail("pull-request-unexpected", "check the pull request on the forge")
PUSH_REJECTED = _fail(
    "push-rejected", "nothing was overwritten; look at the remote branch, then authorize again"
)
PUSH_UNCONFIRMED = _fail("push-unconfirmed", _SPENT)
PULL_REQUEST_CONFLICT = _fail(
    "pull-request-conflict", "look at the pull requests for the branch on the forge"
)


def _safety(remote: str | None = None) -> list[str]:
    """``-c`` settings that keep repository-configured programs from running."""
    args = ["-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never"]
    args += ["-c", "commit.gpgSign=false", "-c", "push.gpgSign=false"]
    if remote is not None:
        # A repository's remote.<name>.uploadpack/receivepack wins over a -c (git keeps
        # the first value it reads), so the transport programs are pinned by the
        # --upload-pack / --receive-pack options of ls-remote and push instead.
        args += ["-c", f"core.sshCommand={_SSH}"]
    return args


def check_remote_name(name: str) -> str:
    """A plain remote name (no URL, no option), else ``remote-invalid`` (exit 2)."""
    if not _REMOTE_NAME.fullmatch(name):
        raise REMOTE_INVALID("--remote must be the name of a configured git remote (e.g. origin)")
    return name


def remote_url(root: Path, remote: str) -> str:
    """The push URL git would use for ``remote`` (after ``pushInsteadOf``)."""
    code, out = try_git(
        root, [*_safety(), "remote", "get-url", "--push", check_remote_name(remote)]
    )
    url = out.decode("utf-8", "surrogateescape").strip()
    if code != 0 or not url:
        raise REMOTE_MISSING("--remote is not a configured remote of the worktree's repository")
    _refuse_steering(root, remote, url)
    return url


def _refuse_steering(root: Path, remote: str, url: str) -> None:
    """Refuse a remote the repository's own configuration would steer (a URL rewrite, a
    credential helper, a proxy, a remote helper): see :mod:`factory.gitio.remote_steering`."""
    from factory.display import inert
    from factory.gitio.remote_steering import scoped_config, steering_keys

    entries = scoped_config(root)
    names = (f"remote.{remote}.url".lower(), f"remote.{remote}.pushurl".lower())
    urls = [url, *(v for _, k, v in entries if k.lower() in names)]
    keys = steering_keys(entries, remote, urls)
    if keys:
        listed = ", ".join(inert(k, limit=120) for k in keys[:5])
        raise REMOTE_STEERED(
            f"the repository's own git configuration sets {listed}, which would choose what "
            "factory's push runs or where it connects"
        )


def git_identity(root: Path) -> tuple[str, str]:
    """``user.name`` and ``user.email`` from git config (they author the commit)."""
    values = []
    for key in ("user.name", "user.email"):
        code, out = try_git(root, ["config", "--get", key])
        value = out.decode("utf-8", "surrogateescape").strip()
        if code != 0 or not value:
            raise GIT_IDENTITY_MISSING(
                f"git config {key} is not set; set it (git config {key} ...) and retry"
            )
        if any(c in value for c in "<>\n\x00") or value != value.strip():
            raise GIT_IDENTITY_INVALID(
                f"git config {key} contains characters a commit header cannot hold"
            )
        values.append(value)
    return values[0], values[1]


def commit_bytes(tree: str, parent: str, plan: CommitPlan) -> bytes:
    """The exact commit object content (git's format)."""
    ident = f"{plan.author_name} <{plan.author_email}> {plan.date.removeprefix('@')}"
    text = f"tree {tree}\nparent {parent}\nauthor {ident}\ncommitter {ident}\n\n{plan.message}"
    return text.encode("utf-8")


def _hash_commit(root: Path, data: bytes, *, write: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="factory-commit-") as tmp:
        path = Path(tmp) / "commit"
        path.write_bytes(data)
        args = [
            "hash-object",
            "-t",
            "commit",
            "--no-filters",
            *(["-w"] if write else []),
            str(path),
        ]
        out = run_git(root, [*_safety(), *args], what="git hash-object")
    oid = out.decode("ascii").strip()
    if not _OID.fullmatch(oid):
        raise COMMIT_FAILED("git hash-object returned no object id")
    return oid


def _object_type(root: Path, oid: str) -> str | None:
    code, out = try_git(root, ["cat-file", "-t", oid])
    return out.decode("ascii", "replace").strip() if code == 0 else None


def local_branch(root: Path, branch: str) -> str | None:
    """The commit ``refs/heads/<branch>`` names locally, or ``None``."""
    code, out = try_git(root, ["rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}"])
    return out.decode("ascii").strip() if code == 0 and out.strip() else None


def remote_branch(root: Path, remote: str, branch: str) -> str | None:
    """The commit the remote's ``refs/heads/<branch>`` names, or ``None`` (read-only)."""
    ref = f"refs/heads/{branch}"
    code, out = try_git(
        root,
        [*_safety(remote), "ls-remote", "--upload-pack=git-upload-pack", "--refs", remote, ref],
    )
    if code != 0:
        raise REMOTE_UNREACHABLE("the remote could not be read (git ls-remote failed)")
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return oid
    return None


@dataclass(frozen=True, slots=True)
class Observation:
    """What publishing would do, observed without any effect."""

    commit: str
    local: Literal["absent", "same"]
    remote: Literal["absent", "same"]
    pull_request: PullRequest | None  # an identical open one that will be reused


def matching_pull(
    pulls: list[PullRequest], intent: PublishIntent, commit: str
) -> PullRequest | None:
    """``None`` when there is no PR for the head; the PR when exactly one identical open
    one exists; otherwise ``pull-request-exists`` (exit 2)."""
    if not pulls:
        return None
    plan = intent.pull_request
    if len(pulls) == 1:
        pr = pulls[0]
        if (
            pr.state == "open"
            and pr.head_ref == intent.branch
            and pr.head_sha == commit
            and pr.base_ref == plan.base
            and pr.title == plan.title
            and pr.body == plan.body
        ):
            return pr
    raise PULL_REQUEST_EXISTS("a different pull request already exists for the branch")


def observe(root: Path, intent: PublishIntent, forge: Forge) -> Observation:
    """Everything the three steps depend on, read without any effect.

    Raises:
        AdapterRefused: ``candidate-objects-missing``, ``local-branch-exists``,
            ``branch-exists``, ``pull-request-exists``, ``remote-unreachable``.
    """
    cand = intent.candidate
    if _object_type(root, cand.candidate_tree) != "tree" or (
        _object_type(root, cand.base_commit) != "commit"
    ):
        raise CANDIDATE_OBJECTS_MISSING(
            "the candidate tree or base commit is not in the repository's object store"
        )
    commit = _hash_commit(
        root, commit_bytes(cand.candidate_tree, cand.base_commit, intent.commit), write=False
    )
    local = local_branch(root, intent.branch)
    if local not in (None, commit):
        raise LOCAL_BRANCH_EXISTS("a local branch of that name already names another commit")
    remote = remote_branch(root, intent.remote.name, intent.branch)
    if remote not in (None, commit):
        raise BRANCH_EXISTS("the branch already exists on the remote at another commit")
    pr = matching_pull(forge.pulls_for_head(intent.repository, intent.branch), intent, commit)
    return Observation(
        commit=commit,
        local="absent" if local is None else "same",
        remote="absent" if remote is None else "same",
        pull_request=pr,
    )


def commit(root: Path, intent: PublishIntent, expected: str) -> Literal["created", "reused"]:
    """Capability 1: write the commit object and create (or reuse) the local branch."""
    cand = intent.candidate
    data = commit_bytes(cand.candidate_tree, cand.base_commit, intent.commit)
    oid = _hash_commit(root, data, write=True)
    if oid != expected:
        raise COMMIT_MISMATCH("the commit differs from the one authorized")
    ref = f"refs/heads/{intent.branch}"
    current = local_branch(root, intent.branch)
    if current == oid:
        return "reused"
    code, _ = try_git(root, [*_safety(), "update-ref", ref, oid, ZERO_OID])
    if code != 0:
        raise COMMIT_FAILED("the local branch could not be created (it appeared meanwhile?)")
    return "created"


def push(root: Path, intent: PublishIntent, oid: str) -> Literal["pushed", "reused"]:
    """Capability 2: the leased push (or reuse when the remote already names ``oid``)."""
    remote, ref = intent.remote.name, f"refs/heads/{intent.branch}"
    if remote_branch(root, remote, intent.branch) == oid:
        return "reused"
    args = [
        *_safety(remote),
        "push",
        "--receive-pack=git-receive-pack",
        "--porcelain",
        "--no-verify",
        "--no-recurse-submodules",
        "--no-follow-tags",
        f"--force-with-lease={ref}:",
        remote,
        f"{oid}:{ref}",
    ]
    code, out = try_git(root, args)
    rejected = any(line.startswith("!") for line in out.decode("utf-8", "replace").splitlines())
    if code != 0 or rejected:
        raise PUSH_REJECTED(
            "the push was refused: the branch appeared on the remote since it was observed "
            "(the lease held), or the remote refused it"
        )
    after = remote_branch(root, remote, intent.branch)
    if after != oid:
        raise PUSH_UNCONFIRMED("after the push the remote branch does not name the commit")
    return "pushed"


def open_pull_request(forge: Forge, intent: PublishIntent, oid: str) -> tuple[PullRequest, bool]:
    """Capability 3: open the pull request, or reuse the identical open one.

    Returns the pull request and whether it was reused.
    """
    pulls = forge.pulls_for_head(intent.repository, intent.branch)
    try:
        existing = matching_pull(pulls, intent, oid)
    except AdapterRefused as exc:
        raise PULL_REQUEST_CONFLICT(exc.fact) from None
    if existing is not None:
        return existing, True
    plan = intent.pull_request
    pr = forge.create_pull(
        intent.repository, head=intent.branch, base=plan.base, title=plan.title, body=plan.body
    )
    if pr.head_ref != intent.branch or pr.base_ref != plan.base or pr.state != "open":
        raise PULL_REQUEST_UNEXPECTED(
            "the forge's new pull request does not have the requested head and base"
        )
    return pr, False


def worktree_root(path: str) -> Path:
    """The receipt's worktree as an existing folder."""
    root = Path(path)
    if not root.is_dir():
        raise WORKTREE_GONE("the receipt's worktree no longer exists")
    return Path(os.path.realpath(root))

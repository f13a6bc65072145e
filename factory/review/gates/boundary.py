"""pre-pr: choosing the boundary a pull request is judged against (SPEC R).

With ``--base-ref REF`` the boundary is the commit REF names here; an unknown REF is a
denial (``boundary-selection/unavailable``), never a fallback. Without it, the boundary is
the *push remote's default branch*: the remote is ``branch.<b>.pushRemote``, else
``remote.pushDefault``, else ``branch.<b>.remote``, else ``origin`` (:func:`push_remote`,
pure), it must be configured, ``git ls-remote --symref REMOTE HEAD`` must name its default
branch, and that commit must exist locally (fetch first otherwise). The live base is the
merge base of the boundary and HEAD; the candidate is the checkout's raw-bytes candidate.

Contacting a remote is the one place a gate leaves the machine. It runs with everything a
repository could configure to run a program pinned off: ``--upload-pack=git-upload-pack``,
``core.sshCommand=ssh``, ``protocol.ext.allow=never`` and no credential helper (a remote
that needs credentials answers "unavailable").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from factory.display import inert
from factory.gitio.config import RepoConfig, read_config
from factory.gitio.run import try_git
from factory.gitio.worktree import Worktree
from factory.review.gates import gitfacts
from factory.review.gates.decide import Live
from factory.review.gates.live import Derived, GateRequest, same_base, worktree_candidate
from factory.review.gates.verdict import Verdict, deny

if TYPE_CHECKING:  # built only by select_boundary (pre-push imports this module too)
    from factory.review.gates.result import BoundaryView

REMOTE_SAFETY = (
    "-c",
    "core.sshCommand=ssh",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "credential.helper=",
    "-c",
    "core.askPass=",
)


def push_remote(cfg: RepoConfig, branch: str | None) -> str:
    """The remote a push of ``branch`` goes to (git's own order of precedence)."""
    keys = []
    if branch is not None:
        keys.append(f"branch.{branch}.pushremote")
    keys.append("remote.pushdefault")
    if branch is not None:
        keys.append(f"branch.{branch}.remote")
    for key in keys:
        value = cfg.last(key)
        if value:
            return value
    return "origin"


def remote_problem(wt: Worktree, remote: str, cfg: RepoConfig | None = None) -> str | None:
    """Why ``remote`` is not a configured remote with a URL (None when it is)."""
    if remote.startswith("-") or not remote:
        return f"{inert(remote)} is not a remote name"
    cfg = cfg or read_config(wt.root)
    if not cfg.last(f"remote.{remote}.url"):
        return f"remote {inert(remote)} is not configured (git remote add {inert(remote)} URL)"
    return None


def _unavailable(why: str, view: BoundaryView) -> tuple[BoundaryView, Verdict]:
    return view, deny(
        "boundary-selection/unavailable",
        f"the pre-pr boundary cannot be selected: {why}",
        "factory review validate --gate pre-pr --base-ref REF",
        "git fetch",
    )


def _current_branch(wt: Worktree) -> str | None:
    code, out = try_git(wt.root, ["symbolic-ref", "-q", "--short", "HEAD"])
    return out.decode("utf-8", "surrogateescape").strip() or None if code == 0 else None


def select_boundary(wt: Worktree, base_ref: str | None) -> tuple[BoundaryView, Verdict | None]:
    """The boundary commit (as a view), or the view so far and the denial."""
    from factory.review.gates.result import BoundaryView

    if base_ref is not None:
        view = BoundaryView(
            source="base-ref", remote=None, ref=base_ref, commit=None, merge_base=None
        )
        commit = gitfacts.commit_of(wt.root, base_ref)
        if commit is None:
            return _unavailable(f"--base-ref {inert(base_ref)} names no commit here", view)
        return view.model_copy(update={"commit": commit}), None
    cfg = read_config(wt.root)
    remote = push_remote(cfg, _current_branch(wt))
    view = BoundaryView(
        source="push-remote-default-branch", remote=remote, ref=None, commit=None, merge_base=None
    )
    bad = remote_problem(wt, remote, cfg)
    if bad is not None:
        return _unavailable(bad, view)
    code, out = try_git(
        wt.root,
        [*REMOTE_SAFETY, "ls-remote", "--upload-pack=git-upload-pack", "--symref", remote, "HEAD"],
    )
    if code != 0:
        return _unavailable(
            f"git ls-remote --symref {inert(remote)} HEAD failed (exit {code})", view
        )
    ref, sha = None, None
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            ref = line[5:-5]
        elif line.endswith("\tHEAD"):
            sha = line.split("\t", 1)[0]
    if ref is None or sha is None:
        return _unavailable(
            f"remote {inert(remote)} has no default branch (its HEAD names no branch it "
            "has: push that branch to it, or point its HEAD at a branch it has)",
            view,
        )
    view = view.model_copy(update={"ref": ref})
    commit = gitfacts.commit_of(wt.root, sha)
    if commit is None:
        return _unavailable(
            f"the default branch {inert(ref)} of {inert(remote)} is at {sha[:12]}, which is not "
            "here (fetch it)",
            view,
        )
    return view.model_copy(update={"commit": commit}), None


def _restart(view: BoundaryView) -> str:
    """Review the candidate against the boundary's merge base (concrete, when known)."""
    mb = view.merge_base
    return f"factory review start --base-ref {mb}" if mb else "factory review start"


def derive_pre_pr(wt: Worktree, req: GateRequest, earlier: Derived | None) -> Derived:
    chain = gitfacts.first_parent_chain(wt.root, 1)
    head = chain[0] if chain else None
    view, problem = select_boundary(wt, req.base_ref)
    base = None
    if problem is None and view.commit is not None and head is not None:
        mb = gitfacts.merge_base(wt.root, view.commit, head.commit)
        if mb is None:
            view, problem = _unavailable("the boundary and HEAD share no history", view)
        else:
            view = view.model_copy(update={"merge_base": mb})
            base = gitfacts.tree_of(wt.root, mb)
    if problem is None and head is None:
        view, problem = _unavailable("HEAD names no commit (an unborn branch)", view)
    cand = None
    if base is not None:
        cand = worktree_candidate(wt, base, earlier)
        problem = problem or cand.problem
    live = Live(
        gate="pre-pr",
        kind="base-diff",
        natural_base=base,
        candidate_tree=cand.tree if cand else (head.tree if head else ""),
        paths=cand.paths if cand else (),
        head_commit=head.commit if head else None,
        head_tree=head.tree if head else None,
        staged_tree=None,
        delivery=(),
        problem=problem,
    )
    return Derived(
        live,
        same_base(base, "pre-pr", _restart(view)),
        boundary=view,
        cache=cand.cache if cand else None,
        fast=cand.fast if cand else None,
    )

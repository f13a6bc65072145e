"""``factory runs``: the runs factory knows of in a repository, and what is left of each
(issue 22, SPEC M-1).

From the run registry (:mod:`factory.runs.registry`: one record per ``factory agent
--repo`` run, written before its branch and worktree existed) plus what git says still
exists: each run's worktree (still there, still registered), its branch (and where it
points), the receipt it named (status, verdict, route), whether that receipt still
verifies and where its change is now (:mod:`factory.agent.representation`), and whether
the change is *kept elsewhere* — a commit on another branch or remote-tracking ref that
holds the candidate tree or names the receipt's revision (what ``factory receipt apply
--commit`` writes), or another checkout whose index holds the candidate tree (applied,
staged). Worktrees and branches that look like factory's (``*.factory-run-*``,
``factory/run-*``) but no record names are listed as ``recorded: false``.

:func:`prune_decision` is the pure rule ``factory runs prune`` follows: only a recorded
run whose receipt verifies and whose change is kept elsewhere (applied, committed
elsewhere) or was rejected may go; everything else stays, with the reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from factory.errors import FactoryError
from factory.gitio.run import run_git, try_git
from factory.models import StrictModel
from factory.runs.registry import RunRecord, list_runs

RUNS_SCHEMA: Final = "factory.runs/1"
FACTORY_BRANCH_PREFIX: Final = "factory/run-"
FACTORY_DIR_INFIX: Final = ".factory-run-"


class RunView(StrictModel):
    """One run as ``factory runs`` shows it. ``change``: the representation state of its
    judged candidate (``None`` without one); ``kept_elsewhere``: where else the change is
    (``commit <id> on <ref>`` / ``staged in <checkout>``); ``prune``: whether ``factory runs
    prune`` would remove it, ``why`` in words."""

    run_id: str | None
    recorded: bool
    created_at: str | None
    worktree: str | None
    worktree_exists: bool
    branch: str | None
    branch_tip: str | None
    base_commit: str | None
    receipt: str | None
    status: str | None
    verdict: str | None
    route: str | None
    verifies: bool | None
    change: str | None
    kept_elsewhere: str | None
    prune: bool
    why: str


class RunsOverview(StrictModel):
    """``factory.runs/1``: every run of the repository whose common dir is ``repository``."""

    schema_id: Literal["factory.runs/1"] = Field(default=RUNS_SCHEMA, alias="schema")
    repository: str
    runs: list[RunView]


@dataclass(frozen=True, slots=True)
class Facts:
    """What :func:`prune_decision` needs to know about one run."""

    recorded: bool
    worktree_exists: bool
    branch_exists: bool
    status: str | None
    verifies: bool | None
    live: bool
    kept_elsewhere: str | None


def prune_decision(f: Facts) -> tuple[bool, str]:
    """Whether ``factory runs prune`` removes the run, and why (pure)."""
    if not f.recorded:
        return False, "no factory record names it: remove it yourself if you are sure"
    if not f.worktree_exists and not f.branch_exists:
        return False, "nothing left to remove"
    if f.status is None:
        return False, "its receipt cannot be read"
    if f.live:
        return False, "the run is still going"
    if not f.verifies:
        return False, "its receipt does not verify now (see factory receipt verify)"
    if f.status == "rejected":
        return True, "rejected"
    if f.status == "completed" and f.kept_elsewhere is not None:
        return True, f"approved and kept elsewhere: {f.kept_elsewhere}"
    if f.status == "completed":
        return False, "approved, and its change is nowhere else yet (receipt apply, or commit)"
    return False, f"{f.status}: kept for you to look at"


def worktrees_of(common: Path) -> dict[str, str | None]:
    """Registered worktree folder → the branch it has checked out (``None``: detached)."""
    out = run_git(common, ["worktree", "list", "--porcelain", "-z"], what="git worktree list")
    found: dict[str, str | None] = {}
    current: str | None = None
    for rec in out.decode("utf-8", "surrogateescape").split("\0"):
        if rec.startswith("worktree "):
            current = os.path.realpath(rec[len("worktree ") :])
            found[current] = None
        elif rec.startswith("branch ") and current is not None:
            found[current] = rec[len("branch ") :]
    return found


def _tip(common: Path, branch: str | None) -> str | None:
    if not branch:
        return None
    code, out = try_git(common, ["rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}"])
    return out.decode("ascii", "replace").strip() if code == 0 and out.strip() else None


def commits_elsewhere(
    common: Path, base: str, own_branch: str | None, tree: str, revision: str | None
) -> str | None:
    """A commit on another branch or remote-tracking ref (not reachable from ``base``)
    whose tree is ``tree`` or whose message names ``revision``: ``commit <id>``."""
    exclude = [f"--exclude={own_branch}"] if own_branch else []
    refs = [*exclude, "--branches", "--remotes", f"^{base}"]
    out = run_git(common, ["rev-list", "--format=%T", *refs, "--"], what="git rev-list")
    lines = out.decode("ascii", "replace").split("\n")
    for i in range(0, len(lines) - 1, 2):
        if lines[i + 1].strip() == tree:
            return f"commit {lines[i].removeprefix('commit ')[:12]}"
    if revision:
        args = ["rev-list", "-1", "--fixed-strings", f"--grep={revision}", *refs, "--"]
        named = run_git(common, args, what="git rev-list").decode().strip()
        if named:
            return f"commit {named[:12]} (names the receipt)"
    return None


def staged_elsewhere(worktrees: dict[str, str | None], own: str, tree: str) -> str | None:
    """Another checkout whose index holds ``tree`` (the change applied, not committed)."""
    from factory.gitio.apply import index_tree, locate_checkout

    for folder in worktrees:
        if folder == own or not os.path.isdir(folder):
            continue
        checkout = locate_checkout(Path(folder))
        if checkout is not None and index_tree(checkout) == tree:
            return f"staged in {folder}"
    return None


@dataclass(frozen=True, slots=True)
class _Receipt:
    status: str | None = None
    verdict: str | None = None
    route: str | None = None
    verifies: bool | None = None
    change: str | None = None
    live: bool = False
    tree: str | None = None
    revision: str | None = None


def _receipt(path: str) -> _Receipt:
    from factory.agent.verify import liveness, load_receipt, verify

    try:
        receipt, _ = load_receipt(Path(path))
        report = verify(Path(path))
    except FactoryError:
        return _Receipt()
    cand = receipt.final_candidate()
    rep = report.representation
    return _Receipt(
        status=receipt.status,
        verdict=receipt.verdict,
        route=receipt.route,
        verifies=report.ok,
        change=rep.state if rep is not None and rep.state != "no-candidate" else None,
        live=receipt.status == "running" and liveness(receipt) != "abandoned",
        tree=cand.body.candidate_tree if cand is not None else None,
        revision=receipt.revision,
    )


def _view(common: Path, rec: RunRecord, worktrees: dict[str, str | None]) -> RunView:
    folder = os.path.realpath(rec.worktree)
    exists = folder in worktrees and os.path.isdir(folder)
    tip = _tip(common, rec.branch)
    got = _receipt(rec.receipt)
    kept = None
    if got.status == "completed" and got.tree is not None:
        try:
            kept = commits_elsewhere(common, rec.base_commit, rec.branch, got.tree, got.revision)
            kept = kept or staged_elsewhere(worktrees, folder, got.tree)
        except FactoryError:
            kept = None
    facts = Facts(True, exists, tip is not None, got.status, got.verifies, got.live, kept)
    prune, why = prune_decision(facts)
    return RunView(
        run_id=rec.run_id,
        recorded=True,
        created_at=rec.created_at,
        worktree=rec.worktree,
        worktree_exists=exists,
        branch=rec.branch,
        branch_tip=tip,
        base_commit=rec.base_commit,
        receipt=rec.receipt,
        status=got.status,
        verdict=got.verdict,
        route=got.route,
        verifies=got.verifies,
        change=got.change,
        kept_elsewhere=kept,
        prune=prune,
        why=why,
    )


def _unrecorded(
    common: Path, records: list[RunRecord], worktrees: dict[str, str | None]
) -> list[RunView]:
    """Factory-looking worktrees and ``factory/run-*`` branches no record names."""
    known_dirs = {os.path.realpath(r.worktree) for r in records}
    known_branches = {r.branch for r in records if r.branch}
    out = run_git(
        common,
        ["for-each-ref", "--format=%(refname:lstrip=2)", f"refs/heads/{FACTORY_BRANCH_PREFIX}*"],
        what="git for-each-ref",
    )
    branches = [b for b in out.decode("utf-8", "surrogateescape").split("\n") if b]
    views: list[RunView] = []
    for folder, branch in worktrees.items():
        name = os.path.basename(folder)
        if FACTORY_DIR_INFIX not in name or folder in known_dirs:
            continue
        short = branch.removeprefix("refs/heads/") if branch else None
        views.append(_loose(folder, short, _tip(common, short), os.path.isdir(folder)))
        if short:
            known_branches.add(short)
    for branch in branches:
        if branch not in known_branches:
            views.append(_loose(None, branch, _tip(common, branch), False))
    return views


def _loose(folder: str | None, branch: str | None, tip: str | None, exists: bool) -> RunView:
    facts = Facts(False, exists, tip is not None, None, None, False, None)
    return RunView(
        run_id=None,
        recorded=False,
        created_at=None,
        worktree=folder,
        worktree_exists=exists,
        branch=branch,
        branch_tip=tip,
        base_commit=None,
        receipt=None,
        status=None,
        verdict=None,
        route=None,
        verifies=None,
        change=None,
        kept_elsewhere=None,
        prune=False,
        why=prune_decision(facts)[1],
    )


def overview(common: Path) -> RunsOverview:
    """Every run of the repository with common dir ``common`` (see the module docstring)."""
    records = list_runs(common)
    worktrees = worktrees_of(common)
    views = [_view(common, rec, worktrees) for rec in records]
    views += _unrecorded(common, records, worktrees)
    return RunsOverview(repository=os.fspath(common), runs=views)


def common_dir_of(path: Path) -> Path | None:
    """The common git dir of the repository ``path`` lies in (any folder of it, bare or
    not, a partial clone too), or ``None``."""
    if not path.is_dir():
        return None
    code, out = try_git(path, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
    text = out.decode("utf-8", "surrogateescape").strip()
    return Path(os.path.realpath(text)) if code == 0 and text else None

"""Where the judged candidate lives now: a representation change is not a mismatch
(issue 22, SPEC M-1).

After a run approves a change, the user takes it: commits it in the run's worktree, or
keeps working on top. The candidate may move from the worktree's files into a commit and
stay the same candidate (the review gates already treat a pre-push commit so). ``factory
receipt verify`` therefore recognises, by code, where the receipt's judged candidate
(the final one) is now — :class:`Representation`, the ``representation`` field of
``factory.receipt-verification/1``:

* ``uncommitted`` — HEAD is still the base commit and the worktree's raw tree (the bytes
  on disk, untracked files included: :func:`factory.gitio.candidate.derive`) is the
  candidate tree; staged or not;
* ``committed`` — HEAD is a commit whose tree is the candidate tree and whose first
  parent is the base commit, and the worktree holds exactly it (``committed_as``);
* ``committed-then-changed`` — such a commit is on HEAD's first-parent chain, right after
  the base, but HEAD or the files moved on since: the receipt's claims stand for
  ``committed_as``, and ``changed_since`` lists, by path, what differs between the
  candidate tree and what the worktree holds now;
* ``worktree-gone`` — the worktree no longer exists: the receipt is verified from its
  evidence alone;
* ``mismatch`` — the live worktree holds none of these; ``differing_paths`` lists which
  paths differ from the candidate tree (when the worktree could be read);
* ``no-candidate`` — the receipt binds no candidate.

Only ``mismatch`` fails a receipt that claims the worktree holds its candidate
(``completed``, ``rejected``). :func:`decide` is pure; :func:`represent` gathers the git
facts it needs through :mod:`factory.gitio` (no repository program runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from factory.agent.receipt import AgentReceipt
from factory.errors import FactoryError
from factory.models import SparseModel

RepresentationState = Literal[
    "uncommitted",
    "committed",
    "committed-then-changed",
    "worktree-gone",
    "mismatch",
    "no-candidate",
]
#: At most this many paths are listed; ``paths_left_out`` counts the rest.
MAX_PATHS: Final = 200


class Representation(SparseModel):
    """Where the judged candidate is now (see the module docstring). ``head``: the
    worktree's HEAD when it exists; ``committed_as``: the commit holding the candidate;
    ``changed_since`` / ``differing_paths``: sorted paths; ``reason``: why paths or facts
    could not be read (a typed error's code)."""

    state: RepresentationState
    head: str | None = None
    committed_as: str | None = None
    changed_since: list[str] | None = None
    differing_paths: list[str] | None = None
    paths_left_out: int | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class FirstCommit:
    """The first commit after the base on HEAD's first-parent chain."""

    commit: str
    first_parent: str | None
    tree: str


@dataclass(frozen=True, slots=True)
class LiveFacts:
    """What the live worktree says: HEAD, its raw tree (``None`` when it could not be
    derived), and the first commit after the base (``None`` when HEAD is the base or no
    commit follows it)."""

    head: str | None
    live_tree: str | None
    first: FirstCommit | None


def decide(
    base_commit: str, candidate_tree: str, facts: LiveFacts
) -> tuple[RepresentationState, str | None]:
    """The state and the commit holding the candidate (pure; see the module docstring)."""
    if facts.head == base_commit:
        return ("uncommitted" if facts.live_tree == candidate_tree else "mismatch"), None
    first = facts.first
    if first is None or first.first_parent != base_commit or first.tree != candidate_tree:
        return "mismatch", None
    if facts.head == first.commit and facts.live_tree == candidate_tree:
        return "committed", first.commit
    return "committed-then-changed", first.commit


def _first_after(root: Path, base: str, head: str) -> FirstCommit | None:
    from factory.gitio.run import run_git

    out = run_git(
        root,
        ["rev-list", "--first-parent", "--parents", "--reverse", f"{base}..{head}", "--"],
        what="git rev-list",
    )
    line = out.decode("ascii", "replace").partition("\n")[0].split()
    if not line:
        return None
    tree = run_git(root, ["rev-parse", "--verify", f"{line[0]}^{{tree}}"], what="git rev-parse")
    return FirstCommit(line[0], line[1] if len(line) > 1 else None, tree.decode().strip())


def _paths(root: Path, a: str, b: str) -> tuple[list[str], int]:
    from factory.gitio.difftree import changed_names

    names = changed_names(root, a, b)
    return list(names[:MAX_PATHS]), max(0, len(names) - MAX_PATHS)


def _made(state: RepresentationState, **fields: object) -> Representation:
    """A :class:`Representation` with only the fields that hold something."""
    given = {key: value for key, value in fields.items() if value is not None}
    return Representation.model_validate({"state": state, **given})


def represent(
    receipt: AgentReceipt, live_tree: str | None, live_problem: str | None
) -> Representation:
    """Where ``receipt``'s judged candidate is now, given the worktree's raw tree as
    :func:`factory.agent.verify_git.live_candidate` derived it (``live_problem``: the
    error code when it could not)."""
    cand = receipt.final_candidate()
    if cand is None:
        return _made("no-candidate")
    if not Path(receipt.worktree).is_dir():
        return _made("worktree-gone")
    from factory.gitio.worktree import head_commit, locate

    body = cand.body
    try:
        wt = locate(Path(receipt.worktree))
        head = head_commit(wt)
        first = _first_after(wt.root, body.base_commit, head) if head else None
    except FactoryError as exc:
        return _made("mismatch", reason=exc.code)
    state, commit = decide(body.base_commit, body.candidate_tree, LiveFacts(head, live_tree, first))
    if state in ("uncommitted", "committed"):
        return _made(state, head=head, committed_as=commit)
    # After a commit of the candidate, what changed since is read against the live files,
    # or (when they could not be read) against HEAD's tree.
    against = live_tree if live_tree is not None else (head if commit is not None else None)
    if against is None:
        return _made(state, head=head, committed_as=commit, reason=live_problem)
    try:
        paths, left_out = _paths(wt.root, body.candidate_tree, against)
    except FactoryError as exc:
        return _made(state, head=head, committed_as=commit, reason=exc.code)
    key = "changed_since" if state == "committed-then-changed" else "differing_paths"
    listed = {key: paths, "paths_left_out": left_out}
    return _made(state, head=head, committed_as=commit, reason=live_problem, **listed)


@dataclass(frozen=True, slots=True)
class RepresentationNote:
    """What both receipt views say about the representation (one wording): ``state``,
    the sentence, the paths listed under it (``paths_label`` names them) and how many more
    were left out; ``bad``: a mismatch."""

    state: str
    sentence: str
    paths_label: str | None = None
    paths: tuple[str, ...] = ()
    left_out: int = 0
    bad: bool = False


def _short(commit: str | None) -> str:
    return (commit or "?")[:12]


def describe(value: object) -> RepresentationNote | None:
    """The note for a report's ``representation`` value (``None``: nothing to say — no
    candidate, or a report from before the field existed). Strings are returned raw: the
    renderers pass them through the display sanitiser."""
    if not isinstance(value, dict):
        return None
    try:
        rep = Representation.model_validate(value)
    except ValueError:
        return None
    reason = f" ({rep.reason})" if rep.reason else ""
    state = rep.state
    if state == "uncommitted":
        return RepresentationNote(state, "uncommitted in the worktree (HEAD is still the base)")
    if state == "committed":
        return RepresentationNote(
            state,
            f"committed as {_short(rep.committed_as)}: HEAD's tree is the judged candidate "
            "tree and its parent the base commit",
        )
    if state == "committed-then-changed":
        return RepresentationNote(
            state,
            f"committed as {_short(rep.committed_as)}, then changed: the receipt's claims stand "
            f"for that commit; the worktree has moved on since{reason}",
            "changed since" if rep.changed_since is not None else None,
            tuple(rep.changed_since or ()),
            rep.paths_left_out or 0,
        )
    if state == "worktree-gone":
        return RepresentationNote(state, "the worktree is gone: verified from the evidence alone")
    if state == "mismatch" and rep.differing_paths == [] and not rep.paths_left_out:
        return RepresentationNote(
            state,
            "MISMATCH: the files are the judged candidate's, but HEAD does not commit them on "
            "the base",
            bad=True,
        )
    if state == "mismatch":
        return RepresentationNote(
            state,
            "MISMATCH: the worktree holds neither the judged candidate nor a commit of it on "
            f"the base{reason}",
            "differing paths" if rep.differing_paths is not None else None,
            tuple(rep.differing_paths or ()),
            rep.paths_left_out or 0,
            bad=True,
        )
    return None

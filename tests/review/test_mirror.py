"""Review authority travels with git (issue 23 §2; SPEC M-4): push and fetch of the mirror
between two clones through a bare remote, a tampered mirror refused, concurrent pushes
losing no lineage, and a fresh clone judging with the mirror exactly as the local store
would (same reason codes), each refusal with its negative-control twin."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from factory.review.mirror.objects import read_entry, write_entry
from tests.review.cli_helpers import review
from tests.review.mirror_support import (
    NS,
    approve_and_push,
    branch_of,
    clone,
    code,
    gate,
    with_remote,
)
from tests.support.git import git
from tests.support.git_remote import remote_state


def test_push_then_fetch_in_a_fresh_clone_allows_the_reviewed_candidate_only(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    lineage = approve_and_push(repo, tmp_path)
    local = gate(repo)  # the local store's answer, for comparison
    assert local.code == 0, local.stderr
    pushed = review("push", "--remote", "origin", cwd=repo)
    assert pushed.code == 0, pushed.stderr
    assert [r["lineage"] for r in pushed.doc["lineages"]] == [lineage]
    assert git(bare, "for-each-ref", "--format=%(refname)", NS).split() == [NS + lineage]
    again = review("push", "--remote", "origin", cwd=repo)  # idempotent: same commit
    assert again.code == 0 and again.doc["lineages"][0]["remote"] == "up-to-date"

    ci = clone(bare, tmp_path / "ci", branch_of(repo))
    before = gate(ci, "--from-refs")  # negative control: no mirror fetched yet
    assert before.code == 3 and code(before) == "receipt-discovery/missing"
    fetched = review("fetch", "--remote", "origin", cwd=ci)
    assert fetched.code == 0, fetched.stderr
    assert fetched.doc["lineages"] == [
        {"lineage": lineage, "commit": pushed.doc["lineages"][0]["commit"], "local": "created"}
    ]
    allowed = gate(ci, "--from-refs")
    assert allowed.code == 0, allowed.stderr
    assert allowed.doc["context"]["lineage_id"] == lineage
    assert allowed.doc["context"]["receipt"] == local.doc["context"]["receipt"]
    assert "authority: the review mirror, 1 ref(s)" in allowed.stderr
    # the mirror is not the local store: without --from-refs the fresh clone has nothing
    assert code(gate(ci)) == "receipt-discovery/missing"

    # another candidate: the same edit in both clones gets the same reason code
    for where in (repo, ci):
        (where / "src" / "parser.py").write_text("def other():\n    return 1\n")
    denied, local_denied = gate(ci, "--from-refs"), gate(repo)
    assert denied.code == local_denied.code == 3
    assert code(denied) == code(local_denied) is not None
    assert denied.doc["result"] == local_denied.doc["result"]


def test_a_tampered_mirror_is_refused_by_fetch_and_denied_by_the_gate(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    lineage = approve_and_push(repo, tmp_path)
    assert review("push", cwd=repo).code == 0
    honest = clone(bare, tmp_path / "honest", branch_of(repo))
    assert review("fetch", cwd=honest).code == 0  # twin: the untampered mirror imports

    # an attacker rewrites the remote ref: the record now claims another candidate tree
    files, why = read_entry(repo, lineage, git(repo, "rev-parse", NS + lineage).strip())
    assert why is None
    state = files["review-state.json"].decode()
    tree = git(repo, "rev-parse", "HEAD~1^{tree}").strip()
    forged = dict(files, **{"review-state.json": _swap_candidate(state, tree).encode()})
    oid = write_entry(repo, lineage, forged)
    git(repo, "push", "-q", "--force", str(bare), f"{oid}:{NS}{lineage}")

    fresh = clone(bare, tmp_path / "fresh", branch_of(repo))
    refused = review("fetch", cwd=fresh)
    assert refused.code == 4 and refused.doc["error"]["code"] == "review-mirror-invalid"
    assert lineage in refused.stderr
    assert git(fresh, "for-each-ref", "refs/factory") == ""  # nothing imported, staging gone
    # fetched around factory, the same store code refuses it at the gate
    git(fresh, "fetch", "-q", "origin", f"{NS}*:{NS}*")
    denied = gate(fresh, "--from-refs")
    assert denied.code == 3 and code(denied) == "receipt-discovery/authority-corrupted"
    first = f"git update-ref -d {NS}{lineage}"
    assert denied.doc["context"]["next"] == [first, "factory review fetch"]
    assert denied.doc["reason"].endswith(f"(next: {first})")
    # the clone that imported the honest entry keeps it: the forged one is a conflict
    conflict = review("fetch", cwd=honest)
    assert conflict.code == 2 and conflict.doc["error"]["code"] == "review-mirror-conflict"
    assert gate(honest, "--from-refs").code == 0


def _swap_candidate(state: str, tree: str) -> str:
    import json

    doc = json.loads(state)
    doc["state"]["current_snapshot"]["candidate_tree"] = tree
    return json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"


def test_a_mirror_ref_is_never_moved_by_push(repo: Path, tmp_path: Path) -> None:
    bare = with_remote(repo, tmp_path)
    lineage = approve_and_push(repo, tmp_path)
    files, _ = read_entry(repo, lineage, _entry(repo, lineage))
    other = write_entry(repo, lineage, dict(files, **{"review-receipt.json": b"{}\n"}))
    git(repo, "push", "-q", str(bare), f"{other}:{NS}{lineage}")  # someone else's entry
    seen = remote_state(bare)
    refused = review("push", cwd=repo)
    assert refused.code == 2 and refused.doc["error"]["code"] == "review-mirror-conflict"
    assert remote_state(bare)["refs"] == seen["refs"]


def _entry(repo: Path, lineage: str) -> str:
    assert review("push", cwd=repo).code == 0  # a local ref, and the remote one
    oid = git(repo, "rev-parse", NS + lineage).strip()
    bare = Path(git(repo, "remote", "get-url", "origin").strip())
    git(bare, "update-ref", "-d", NS + lineage)  # as if it never reached the remote
    return oid


def test_concurrent_pushes_of_two_mirrors_lose_no_lineage(repo: Path, tmp_path: Path) -> None:
    bare = with_remote(repo, tmp_path)
    second = clone(bare, tmp_path / "second", "main")
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    ids = [approve_and_push(repo, tmp_path / "a"), approve_and_push(second, tmp_path / "b", "x")]
    assert ids[0] != ids[1]
    argv = [sys.executable, "-m", "factory", "review", "push", "--remote", "origin"]
    procs = [
        subprocess.Popen(argv, cwd=c, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for c in (repo, second)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    mirrored = git(bare, "for-each-ref", "--format=%(refname)", NS).split()
    assert sorted(mirrored) == sorted(NS + i for i in ids)
    third = clone(bare, tmp_path / "third", branch_of(second))
    assert review("fetch", cwd=third).code == 0
    assert gate(third, "--from-refs").doc["context"]["lineage_id"] == ids[1]


def test_push_with_nothing_approved_and_a_steering_remote_are_refused(
    repo: Path, tmp_path: Path
) -> None:
    with_remote(repo, tmp_path)
    empty = review("push", cwd=repo)
    assert empty.code == 2 and empty.doc["error"]["code"] == "review-mirror-nothing"
    approve_and_push(repo, tmp_path)
    git(repo, "config", f"url.{tmp_path}/elsewhere.git.insteadOf", str(tmp_path / "remote.git"))
    steered = review("push", cwd=repo)
    assert steered.code == 2 and steered.doc["error"]["code"] == "review-mirror-remote"
    git(repo, "config", "--unset", f"url.{tmp_path}/elsewhere.git.insteadOf")
    assert review("push", cwd=repo).code == 0  # twin: the same push without the rule
    unknown = review("push", "--remote", "nowhere", cwd=repo)
    assert unknown.code == 2 and unknown.doc["error"]["code"] == "review-mirror-remote"


def test_a_recovered_lineage_travels_with_its_predecessor(repo: Path, tmp_path: Path) -> None:
    from factory.review.recovery import recover
    from tests.review.gates_support import approve, commit, finish, loaded

    bare = with_remote(repo, tmp_path)
    git(repo, "switch", "-q", "-c", "topic")
    guide = repo / "docs" / "guide.md"
    guide.write_text("# guide\n\nreviewed words\n")
    first = str(approve(repo, tmp_path)["lineage"])
    guide.write_text("# guide\n\nchanged after approval\n")
    made = recover(
        repo,
        predecessor=first,
        expected_revision=loaded(repo, first).revision,
        disposition="scope_changed",
        reason="edited after approval",
        actor="maintainer",
        authorization=None,
    )
    assert finish(repo, tmp_path)["state"] == "approved"
    commit(repo, "the recovered candidate")
    git(repo, "push", "-q", "origin", "HEAD")
    pushed = review("push", cwd=repo)
    assert pushed.code == 0, pushed.stderr
    assert [r["lineage"] for r in pushed.doc["lineages"]] == [made["lineage"], first]
    ci = clone(bare, tmp_path / "ci", "topic")
    assert review("fetch", cwd=ci).code == 0
    allowed = gate(ci, "--from-refs")
    assert allowed.code == 0, allowed.stderr
    assert allowed.doc["context"]["lineage_id"] == made["lineage"]
    assert allowed.doc["context"]["generation"] == 2
    # twin: the successor without its predecessor is a dangling edge, which fails closed
    git(ci, "update-ref", "-d", NS + first)
    denied = gate(ci, "--from-refs")
    assert denied.code == 3 and code(denied) == "receipt-discovery/authority-corrupted"


def _reshaped(repo: Path, lineage: str, how: str) -> str:
    """A commit for ``lineage`` that is not its mirror entry, in one way."""
    files, _ = read_entry(repo, lineage, git(repo, "rev-parse", NS + lineage).strip())
    if how == "extra-file":
        return write_entry(repo, lineage, dict(files, **{"notes.txt": b"hello\n"}))
    if how == "unbound-evidence":
        name = "evidence/extra-" + hashlib.sha256(b"x").hexdigest()
        return write_entry(repo, lineage, dict(files, **{name: b"x"}))
    tree = git(repo, "rev-parse", f"{NS}{lineage}^{{tree}}").strip()
    return git(repo, "commit-tree", "-m", "a look-alike", tree).strip()  # another author


def test_an_entry_of_another_shape_is_refused_and_its_twin_imports(
    repo: Path, tmp_path: Path
) -> None:
    bare = with_remote(repo, tmp_path)
    lineage = approve_and_push(repo, tmp_path)
    assert review("push", cwd=repo).code == 0
    git(bare, "update-ref", "-m", "keep", "refs/keep", f"{NS}{lineage}")
    for how in ("extra-file", "unbound-evidence", "foreign-commit"):
        oid = _reshaped(repo, lineage, how)
        git(repo, "push", "-q", "--force", str(bare), f"{oid}:{NS}{lineage}")
        fresh = clone(bare, tmp_path / f"fresh-{how}", branch_of(repo))
        refused = review("fetch", cwd=fresh)
        assert refused.code == 4, (how, refused.stderr)
        assert refused.doc["error"]["code"] == "review-mirror-invalid"
        git(fresh, "fetch", "-q", "origin", f"{NS}*:{NS}*")
        # the gate judges the record and its receipt; which blobs travel is fetch's check
        assert gate(fresh, "--from-refs").code == (0 if how == "unbound-evidence" else 3), how
    honest = git(bare, "rev-parse", "refs/keep").strip()
    git(repo, "push", "-q", "--force", str(bare), f"{honest}:{NS}{lineage}")
    twin = clone(bare, tmp_path / "twin", branch_of(repo))
    assert review("fetch", cwd=twin).code == 0
    assert gate(twin, "--from-refs").code == 0

"""``factory.gitio.difftree``: the one ``diff-tree`` parser. Its records equal what git
prints for each path on its own (modes, line counts, binary), a path with a tab, a newline
or bytes that are not UTF-8 stays whole, and the review target and the ``candidate-risk``
evidence source read the same records."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from factory.gitio.difftree import TreeChange, changed_names, parse_raw_numstat, tree_changes
from tests.support.git import git, init_repo


def _trees(tmp_path: Path) -> tuple[Path, str, str]:
    repo = init_repo(tmp_path / "r", {"a.txt": "a\nb\n", "gone.txt": "g\n", "x.sh": "x\n"})
    base = git(repo, "rev-parse", "HEAD^{tree}").strip()
    (repo / "a.txt").write_text("a\nB\nc\n")
    (repo / "gone.txt").unlink()
    (repo / "x.sh").chmod(0o755)
    (repo / "tab\tand\nnewline.txt").write_text("w\n")
    (repo / os.fsdecode(b"odd-\xff.txt")).write_text("o\n")
    (repo / "bin.dat").write_bytes(bytes(range(256)))
    git(repo, "add", "-A")
    return repo, base, git(repo, "write-tree").strip()


def test_records_match_git_path_by_path(tmp_path: Path) -> None:
    repo, base, cand = _trees(tmp_path)
    changes = {c.path: c for c in tree_changes(repo, base, cand)}
    assert changes[b"a.txt"] == TreeChange(b"a.txt", "100644", "100644", 2, 1, False)
    assert changes[b"gone.txt"] == TreeChange(b"gone.txt", "100644", "000000", 0, 1, False)
    assert changes[b"x.sh"] == TreeChange(b"x.sh", "100644", "100755", 0, 0, False)
    assert changes[b"bin.dat"] == TreeChange(b"bin.dat", "000000", "100644", 0, 0, True)
    assert changes[b"tab\tand\nnewline.txt"].added == 1
    assert changes[b"odd-\xff.txt"].new_mode == "100644"
    assert len(changes) == 6
    names = changed_names(repo, base, cand)
    assert names == tuple(sorted(os.fsdecode(p) for p in changes))
    # each path's numstat on its own, from git directly, agrees with the parsed record
    for path, change in changes.items():
        one = subprocess.run(
            ["git", "diff-tree", "-r", "--numstat", "-z", base, cand, "--", os.fsdecode(path)],
            cwd=repo,
            capture_output=True,
            check=True,
        ).stdout
        plus, minus, _ = one.split(b"\t", 2)
        expected = (0, 0, True) if plus == b"-" else (int(plus), int(minus), False)
        assert (change.added, change.deleted, change.binary) == expected


def test_same_tree_runs_no_git_and_is_empty(tmp_path: Path) -> None:
    missing = tmp_path / "not-a-repo"
    assert tree_changes(missing, "t", "t") == [] and changed_names(missing, "t", "t") == ()
    assert parse_raw_numstat(b"") == []


def test_the_review_target_and_the_risk_source_read_the_same_records(tmp_path: Path) -> None:
    from factory.gate.providers.risk import changed_paths
    from factory.gitio.worktree import Worktree
    from factory.review.policy import default_policy
    from factory.review.snapshot import diff_changes

    repo, base, cand = _trees(tmp_path)
    (repo / os.fsdecode(b"odd-\xff.txt")).unlink()  # the review target refuses non-UTF-8
    git(repo, "add", "-A")
    cand = git(repo, "write-tree").strip()
    wt = Worktree(root=repo, git_dir=repo / ".git", common_dir=repo / ".git")
    review = diff_changes(wt, base, cand, default_policy())
    assert list(review) == changed_paths(repo, base, cand) and len(review) == 5

"""One "trust git's index" predicate (issue 25): the index's stat cache and the gates'
fast candidate both ask :func:`factory.gitio.attributes.index_converting`, and over
generated repositories (``core.autocrlf`` in the spellings git accepts,
attributes files tracked or not, LF and CRLF bytes, staged and unstaged edits, untracked
files) each fast answer equals the raw-bytes snapshot's, and where the predicate trusts
nothing neither fast path answers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory.gitio.attributes import index_converting
from factory.gitio.config import read_config
from factory.gitio.discover import discover
from factory.gitio.indexcache import index_stat_cache
from factory.gitio.snapshot import snapshot
from factory.review.gates.fastpath import fast_candidate
from tests.support.git import git, init_repo

AUTOCRLF = [None, "false", "no", "off", "0", "true", "input", "yes", "1", "TRUE", "On"]
ATTRIBUTES = [None, "*.txt text\n", "*.txt -text\n", "a.txt eol=crlf\n", "*.dat binary\n"]
EDITS = ["modify", "crlf", "untracked", "stage", "stage-then-edit", "delete"]


def _apply(repo: Path, edit: str) -> None:
    if edit == "modify":
        (repo / "a.txt").write_text("alpha, changed\n")
    elif edit == "crlf":
        (repo / "d" / "b.txt").write_bytes(b"one\r\ntwo\r\n")
    elif edit == "untracked":
        (repo / "d" / "new.txt").write_bytes(b"new\r\n")
    elif edit == "stage":
        (repo / "c.dat").write_bytes(b"\x00staged\r\n")
        git(repo, "add", "c.dat")
    elif edit == "stage-then-edit":
        (repo / "a.txt").write_text("staged\n")
        git(repo, "add", "a.txt")
        (repo / "a.txt").write_text("staged, then edited\n")
    elif edit == "delete":
        (repo / "d" / "b.txt").unlink()


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    autocrlf=st.sampled_from(AUTOCRLF),
    attributes=st.sampled_from(ATTRIBUTES),
    tracked_attributes=st.booleans(),
    edits=st.lists(st.sampled_from(EDITS), max_size=3, unique=True),
)
def test_fast_answers_equal_the_raw_snapshot(
    tmp_path_factory: pytest.TempPathFactory,
    autocrlf: str | None,
    attributes: str | None,
    tracked_attributes: bool,
    edits: list[str],
) -> None:
    files = {"a.txt": "alpha\n", "d/b.txt": "one\r\ntwo\n", "c.dat": "\x00bin\n"}
    if attributes is not None and tracked_attributes:
        files[".gitattributes"] = attributes
    repo = init_repo(tmp_path_factory.mktemp("r") / "r", files)
    if attributes is not None and not tracked_attributes:
        (repo / ".gitattributes").write_text(attributes)
    if autocrlf is not None:
        git(repo, "config", "core.autocrlf", autocrlf)
    # committed under that configuration: with autocrlf on, its blob holds LF while the
    # file keeps CRLF, and git status calls it clean
    (repo / "e.txt").write_bytes(b"crlf\r\nlines\r\n")
    git(repo, "add", "e.txt")
    git(repo, "commit", "-q", "-m", "e")
    # settle: files older than the index's racy window, stat data refreshed
    time.sleep(0.05)
    future = time.time() + 1
    os.utime(repo / ".git" / "index", (future, future))
    for edit in edits:
        _apply(repo, edit)
    base = git(repo, "rev-parse", "HEAD^{tree}").strip()
    raw = snapshot(repo, base)

    cache = index_stat_cache(repo, base)
    assert snapshot(repo, base, cache=cache).tree == raw.tree
    fast = fast_candidate(discover(repo), base)
    if fast is not None and not raw.problems:
        assert fast.tree == raw.tree
    listed = [p for p in git(repo, "ls-files", "-z").encode().split(b"\0") if p]
    if index_converting(repo, read_config(repo), listed) is None:
        # the predicate trusts nothing: neither fast path answers
        assert fast is None and not cache.entries

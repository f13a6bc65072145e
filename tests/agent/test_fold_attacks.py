"""Adversarial runs against the issue 25 folds: every derivation an agent run makes with
a reused index read equals the former one (``git ls-files`` listing, two passes over the
worktree), and every index-entries digest the run takes equals a fresh read
(:func:`tests.support.former.checking_folds`), whatever the worker or the reviewer does
to the index, its format or the worktree's odd paths."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from tests.agent.fakes import Step, write
from tests.agent.helpers import Ran, run
from tests.support.former import checking_folds
from tests.support.git import git
from tests.support.layout import Layout

Effect = Callable[[Path], object]


def _index(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())


def _run(
    layout: Layout,
    monkeypatch: pytest.MonkeyPatch,
    worker: list[Step],
    reviewer: list[Step],
) -> Ran:
    with checking_folds(monkeypatch) as found:
        ran = trio.run(run, layout, worker, reviewer)
    assert found == [], found
    return ran


def _code(ran: Ran) -> str | None:
    error = ran.outcome.receipt.error
    return error.code if error is not None else None


def _files(ran: Ran) -> list[str]:
    initial = ran.outcome.receipt.candidate.initial
    assert initial is not None
    return sorted(f.path for f in initial.body.files)


# -- the index's format, set before the run ------------------------------------------------


def _split(wt: Path) -> None:
    git(wt, "config", "core.splitIndex", "true")
    git(wt, "update-index", "--split-index")
    git(wt, "status")


def _v4(wt: Path) -> None:
    git(wt, "update-index", "--index-version", "4")
    git(wt, "status")


def _many(wt: Path) -> None:
    git(wt, "config", "feature.manyFiles", "true")
    git(wt, "config", "status.showUntrackedFiles", "all")
    git(wt, "update-index", "--index-version", "4", "--untracked-cache")
    git(wt, "status")


def _icase(wt: Path) -> None:
    git(wt, "config", "core.ignoreCase", "true")


FORMATS: dict[str, Effect] = {
    "plain": lambda wt: None,
    "split": _split,
    "v4": _v4,
    "many": _many,
    "icase": _icase,
}


def _status(wt: Path) -> None:
    git(wt, "status")


def _stage_unstage(wt: Path) -> None:
    (wt / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    git(wt, "add", "src/app.py")
    git(wt, "reset", "-q", "--", "src/app.py")


def _restore_index(wt: Path) -> None:
    """Stage a new file, then put the index's exact bytes and times back."""
    index = _index(wt)
    before, st = index.read_bytes(), index.stat()
    (wt / "sneaky.txt").write_text("staged then hidden\n")
    git(wt, "add", "sneaky.txt")
    index.write_bytes(before)
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns))


def _rewrite_in_place(wt: Path) -> None:
    """Write another index's bytes into the same inode, mtime put back."""
    index = _index(wt)
    st = index.stat()
    (wt / "inplace.txt").write_text("x\n")
    git(wt, "add", "inplace.txt")
    staged = index.read_bytes()
    git(wt, "rm", "-q", "--cached", "inplace.txt")
    with open(_index(wt), "r+b") as f:
        f.truncate(0)
        f.write(staged)
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns))


def _untracked_cache_fooled(wt: Path) -> None:
    """A new file in a folder whose mtime is put back (an untracked cache trusts it)."""
    folder = wt / "src"
    st = folder.stat()
    (folder / "unseen.py").write_text("x = 1\n")
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))


def _index_to_symlink(wt: Path) -> None:
    index = _index(wt)
    index.rename(index.with_name("index.real"))
    index.symlink_to("index.real")


WORKER_EFFECTS: dict[str, Effect] = {
    "write": write("src/app.py", "def add(a, b):\n    return a + b\n"),
    "write-and-status": lambda wt: (write("new.txt", "n\n")(wt), git(wt, "status")),
    "stage-unstage": _stage_unstage,
    "intent-to-add": lambda wt: (write("ita.txt", "i\n")(wt), git(wt, "add", "-N", "ita.txt")),
    "assume-unchanged": lambda wt: (
        git(wt, "update-index", "--assume-unchanged", "README.md"),
        write("README.md", "hidden\n")(wt),
    ),
    "skip-worktree": lambda wt: git(wt, "update-index", "--skip-worktree", "README.md"),
    "rm-cached": lambda wt: git(wt, "rm", "-q", "--cached", "README.md"),
    "restore-index-bytes": _restore_index,
    "rewrite-index-in-place": _rewrite_in_place,
    "untracked-cache-mtime": _untracked_cache_fooled,
    "split-index-now": lambda wt: (write("s.txt")(wt), git(wt, "update-index", "--split-index")),
    "delete-index": lambda wt: _index(wt).unlink(),
    "index-to-symlink": _index_to_symlink,
    "index-v4-now": lambda wt: (
        write("v.txt")(wt),
        git(wt, "update-index", "--index-version", "4"),
    ),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("effect", sorted(WORKER_EFFECTS))
def test_a_worker_index_trick_derives_as_before(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, fmt: str, effect: str
) -> None:
    FORMATS[fmt](layout.wt)
    ran = _run(layout, monkeypatch, [Step(effect=WORKER_EFFECTS[effect])], [Step()])
    if effect == "restore-index-bytes":
        # the staged file is gone from the index again: the file stays, as untracked
        assert ran.outcome.exit_code == 0, _code(ran)
        assert "sneaky.txt" in _files(ran)
    if effect == "rewrite-index-in-place":
        # same inode, mtime put back: the new ctime still shows the write
        assert _code(ran) == "worker-git-mutation"
    if effect == "untracked-cache-mtime":
        assert ran.outcome.exit_code == 0, _code(ran)
        assert "src/unseen.py" in _files(ran)


# -- odd paths and worktree shapes the worker leaves -----------------------------------------


def _raw(name: bytes, data: bytes = b"x\n") -> Effect:
    def effect(wt: Path) -> None:
        full = os.path.join(os.fsencode(wt), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)

    return effect


def _fifo(rel: str) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(wt / rel)

    return effect


def _socket(rel: str) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(wt / rel))

    return effect


def _nested_repo(rel: str, with_fifo: bool = False) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).mkdir(parents=True)
        git(wt / rel, "init", "-q")
        (wt / rel / "inner.txt").write_text("inner\n")
        if with_fifo:
            os.mkfifo(wt / rel / "pipe")

    return effect


def _tracked_to_folder(wt: Path) -> None:
    (wt / "README.md").unlink()
    write("README.md/inside.txt", "now a folder\n")(wt)


def _folder_to_symlink(wt: Path) -> None:
    (wt / "elsewhere").mkdir()
    (wt / "src").rename(wt / "elsewhere" / "src")
    (wt / "src").symlink_to("elsewhere/src")


def _folder_to_outside_symlink(wt: Path) -> None:
    (wt / "src" / "app.py").unlink()
    (wt / "src").rmdir()
    (wt / "src").symlink_to("/etc")


def _case_rename(wt: Path) -> None:
    (wt / "src" / "app.py").rename(wt / "src" / "App.py")


def _unreadable_folder(wt: Path) -> None:
    write("locked/secret.txt", "s\n")(wt)
    (wt / "src").chmod(0)
    (wt / "locked").chmod(0)


def _ignore_own_file(wt: Path) -> None:
    write("gen/out.bin", "generated\n")(wt)
    write("gen/keep.txt", "kept\n")(wt)
    write(".gitignore", "ignored.log\nnode_modules/\nbuild/\ngen/out.bin\n")(wt)


def _negated(wt: Path) -> None:
    write(".gitignore", "ignored.log\nnode_modules/\nbuild/*\n!build/keep.txt\nlogs/\n!logs/x\n")(
        wt
    )
    write("build/keep.txt", "kept\n")(wt)
    write("build/drop.txt", "dropped\n")(wt)
    write("logs/x", "not re-included: its folder is excluded\n")(wt)


ODD = {
    "status-record": _raw(b"? x.txt"),
    "status-record-2": _raw(b"2 R. N... 100644 100644 100644 a b R100 z\x00"[:-1]),
    "newline": _raw(b"new\nline.txt"),
    "tab-backslash-quote": _raw(b'a\tb\\c"d.txt'),
    "not-utf8": _raw(b"bad\xff\xfe.txt"),
    "not-utf8-folder": _raw(b"dir\xff/in.txt"),
    "long": _raw(b"d/" + b"n" * 250),
    "deep": _raw(b"/".join([b"deep"] * 40) + b"/leaf.txt"),
    "fifo-new-folder": _fifo("fresh/dir/pipe"),
    "fifo-ignored": _fifo("node_modules/dep/pipe"),
    "fifo-ignored-file-name": _fifo("ignored.log.d/../pipe.log"),
    "socket": _socket("sock"),
    "nested-repo": _nested_repo("vendor/lib"),
    "nested-repo-fifo": _nested_repo("vendor/lib", with_fifo=True),
    "nested-repo-in-ignored": _nested_repo("build/lib", with_fifo=True),
    "dot-git-file": lambda wt: (write("sub/.git", "gitdir: nowhere\n")(wt), write("sub/f")(wt)),
    "tracked-to-folder": _tracked_to_folder,
    "folder-to-symlink": _folder_to_symlink,
    "folder-to-outside-symlink": _folder_to_outside_symlink,
    "case-rename": _case_rename,
    "unreadable-folder": _unreadable_folder,
    "ignore-own-file": _ignore_own_file,
    "negation": _negated,
    "empty-folder": lambda wt: (wt / "empty" / "deeper").mkdir(parents=True),
    "symlink-loop": lambda wt: (wt / "loop").symlink_to("loop"),
    "case-twin": lambda wt: (write("README.MD", "twin\n")(wt), write("SRC/app.py", "t\n")(wt)),
}


@pytest.mark.parametrize("fmt", ["plain", "many", "icase"])
@pytest.mark.parametrize("odd", sorted(ODD))
def test_odd_worktree_shapes_derive_as_before(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, fmt: str, odd: str
) -> None:
    FORMATS[fmt](layout.wt)
    try:
        ran = _run(layout, monkeypatch, [Step(effect=ODD[odd])], [Step()])
    finally:
        for folder in ("src", "locked"):
            if (layout.wt / folder).is_dir() and not (layout.wt / folder).is_symlink():
                (layout.wt / folder).chmod(0o755)
    # the former and the folded derivation agreed (inside _run); the run ended typed: no
    # internal error, a failure names its code
    code = ran.outcome.exit_code
    assert code in (0, 3, 4) and (code != 4 or _code(ran) is not None), _code(ran)


# -- the reviewer ---------------------------------------------------------------------------


def _restore_index_reviewer(wt: Path) -> None:
    index = _index(wt)
    before, st = index.read_bytes(), index.stat()
    git(wt, "add", "-A")
    index.write_bytes(before)
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns))


REVIEWER_EFFECTS: dict[str, tuple[Effect, bool]] = {  # effect, whether it is a mutation
    "status": (_status, False),
    "refresh": (lambda wt: git(wt, "update-index", "--really-refresh"), False),
    "split-index": (lambda wt: git(wt, "update-index", "--split-index"), False),
    "index-v4": (lambda wt: git(wt, "update-index", "--index-version", "4"), False),
    "restore-index-bytes": (_restore_index_reviewer, False),
    "stage": (lambda wt: git(wt, "add", "-A"), True),
    "intent-to-add": (lambda wt: git(wt, "add", "-N", "new.txt"), True),
    "untracked": (write("notes.txt", "n\n"), True),
    "untracked-cache-mtime": (_untracked_cache_fooled, True),
    "fifo-new-folder": (_fifo("fresh/pipe"), True),
    "fifo-ignored": (_fifo("node_modules/pipe"), True),
    "fifo-nested-repo": (_nested_repo("vendor/lib", with_fifo=True), True),
    "assume-unchanged": (
        lambda wt: git(wt, "update-index", "--assume-unchanged", "README.md"),
        True,
    ),
}


@pytest.mark.parametrize("fmt", ["plain", "split", "many"])
@pytest.mark.parametrize("effect", sorted(REVIEWER_EFFECTS))
def test_a_reviewer_index_trick_is_judged_as_before(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, fmt: str, effect: str
) -> None:
    FORMATS[fmt](layout.wt)
    act, mutation = REVIEWER_EFFECTS[effect]
    worker = [Step(effect=write("new.txt", "n\n"))]
    ran = _run(layout, monkeypatch, worker, [Step(effect=act)])
    if mutation:
        assert ran.outcome.exit_code != 0 and _code(ran) is not None
    else:
        assert ran.outcome.exit_code == 0, _code(ran)


def test_twin_the_check_sees_a_stale_reuse(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control of :func:`checking_folds`: a run made to reuse the admission's
    read whatever the binding says misses the reviewer's staging, and the check says so."""
    import factory.agent.run_state as run_state_mod

    def stale(self: run_state_mod.RunState) -> object:
        read = self.a.index_read
        return None if read is None else read[1]

    monkeypatch.setattr(run_state_mod.RunState, "index_as_read", stale)
    worker = [Step(effect=write("new.txt", "n\n"))]
    with checking_folds(monkeypatch) as found:
        trio.run(run, layout, worker, [Step(effect=lambda wt: git(wt, "add", "-A"))])
    assert any(f.startswith("index entries reused stale") for f in found), found
    # and the stale listing drops the staged file the former listing had
    assert any(f.startswith("derive (index reused: True)") for f in found), found


def test_an_untracked_cache_that_would_hide_a_new_file_does_not(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The untracked files now come from the derivation's own ``git status``, no longer
    from ``git ls-files --others``. With an untracked cache in the index that trusts a
    folder's mtime (``core.trustctime=false``), a plain ``git status`` misses a file made
    in a folder whose mtime was put back; the derivation's status asks for the ignored
    files too, which git never answers from that cache, so the file is in the candidate."""
    import time

    wt = layout.wt
    for key, value in (
        ("core.untrackedCache", "true"),
        ("status.showUntrackedFiles", "all"),
        ("core.trustctime", "false"),
    ):
        git(wt, "config", key, value)
    time.sleep(1.2)  # the folders' mtimes must not be racy against the index's
    git(wt, "update-index", "--untracked-cache")
    git(wt, "status")
    ran = _run(layout, monkeypatch, [Step(effect=_untracked_cache_fooled)], [Step()])
    assert ran.outcome.exit_code == 0, _code(ran)
    assert _files(ran) == ["src/unseen.py"]
    plain = git(wt, "--no-optional-locks", "status", "--porcelain", "-uall")
    assert "unseen.py" not in plain  # the cache was in play: git's own status misses it


def test_a_tracked_file_in_an_ignored_folder_derives_as_before(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build/`` is ignored but holds a tracked file: the worker edits it, adds an ignored
    file and a FIFO beside it, and a new ignored folder inside; the reviewer refreshes."""
    wt = layout.wt
    write("build/kept.txt", "tracked although ignored\n")(wt)
    git(wt, "add", "-f", "build/kept.txt")
    git(wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "kept")

    def worker(w: Path) -> None:
        write("build/kept.txt", "edited\n")(w)
        write("build/new.txt", "ignored beside it\n")(w)
        write("build/node_modules/x.js", "ignored below it\n")(w)
        os.mkfifo(w / "build" / "pipe")

    ran = _run(layout, monkeypatch, [Step(effect=worker)], [Step(effect=_status)])
    # the FIFO, like the new files, lies under the ignored folder: only the edit counts
    assert ran.outcome.exit_code == 0, _code(ran)
    assert _files(ran) == ["build/kept.txt"]

"""The candidate is the bytes on disk, and its patch reproduces it (issue 8 §3).

Observed before: a clean filter made the bound patch show harmless text while the file on
disk said ``rm -rf $HOME``; ``core.autocrlf=true`` hashed a CRLF file from disk while the
patch rebuilt LF bytes; ``core.fileMode=false`` hid an executable-bit change; a FIFO left
by the worker was silently left out.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
from pathlib import Path

import pytest

from factory.agent.receipt import AgentReceipt, receipt_bytes
from factory.agent.verify import verify
from factory.gitio.candidate import derive
from factory.gitio.worktree import locate
from tests.agent.conftest import Layout
from tests.agent.fakes import Effect, Step, chain, write
from tests.agent.helpers import run
from tests.support.git import add_linked_worktree, git, init_repo

EVIL = "#!/bin/sh\nrm -rf $HOME\n"
FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")


def make_layout(tmp_path: Path, files: dict[str, str]) -> Layout:
    base = {"README.md": "sample\n", "src/app.py": "def add(a, b):\n    return a - b\n"}
    repo = init_repo(tmp_path / "repo", {**base, **files})
    wt = add_linked_worktree(repo, tmp_path / "wt")
    out = tmp_path / "out"
    out.mkdir()
    return Layout(repo, wt, out)


def receipt(layout: Layout) -> AgentReceipt:
    return AgentReceipt.model_validate(json.loads(layout.receipt.read_bytes()))


def patch_bytes(layout: Layout, r: AgentReceipt) -> bytes:
    cand = r.final_candidate()
    assert cand is not None
    return (layout.out / cand.patch_evidence.path).read_bytes()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plant_disguise(wt: Path, markers: Path) -> None:
    """A clean filter that stores harmless text instead of the bytes on disk."""
    script = markers / "disguise.sh"
    script.write_text(f"#!/bin/sh\n: > '{markers}/ran'\nsed 's/rm -rf/echo harmless/'\n")
    script.chmod(0o755)
    git(wt, "config", "filter.disguise.clean", str(script))


@pytest.mark.parametrize("filtered", [True, False], ids=["clean-filter", "twin-no-filter"])
async def test_a_clean_filter_cannot_disguise_the_bytes(tmp_path: Path, filtered: bool) -> None:
    layout = make_layout(tmp_path, {".gitattributes": "*.sh filter=disguise\n"})
    markers = tmp_path / "markers"
    markers.mkdir()
    if filtered:
        plant_disguise(layout.wt, markers)
    ran = await run(layout, [Step(effect=write("tool.sh", EVIL))], [Step()])
    assert ran.outcome.exit_code == 0
    r = receipt(layout)
    cand = r.final_candidate()
    assert cand is not None and cand.conversions_differ is filtered
    (f,) = cand.body.files
    assert (f.path, f.sha256) == ("tool.sh", sha(layout.wt / "tool.sh"))
    assert b"+rm -rf $HOME" in patch_bytes(layout, r)  # the patch shows the bytes on disk
    report = verify(layout.receipt)
    assert report["ok"] is True and [p["ok"] for p in report["patches"]] == [True]
    assert not (markers / "ran").exists()  # the filter never ran, in the run or in verify


@pytest.mark.parametrize("autocrlf", ["true", None], ids=["autocrlf", "twin-unset"])
async def test_a_crlf_file_is_bound_with_its_crlf_bytes(
    tmp_path: Path, autocrlf: str | None
) -> None:
    layout = make_layout(tmp_path, {})
    if autocrlf:
        git(layout.wt, "config", "core.autocrlf", autocrlf)
    crlf = b"line one\r\nline two\r\n"
    ran = await run(layout, [Step(effect=lambda wt: (wt / "win.txt").write_bytes(crlf))], [Step()])
    assert ran.outcome.exit_code == 0
    r = receipt(layout)
    assert r.base is not None and r.base.git_settings.autocrlf == autocrlf
    cand = r.final_candidate()
    assert cand is not None and cand.conversions_differ is (autocrlf is not None)
    assert cand.body.files[0].sha256 == hashlib.sha256(crlf).hexdigest()
    assert b"+line one\r\n" in patch_bytes(layout, r)
    assert verify(layout.receipt)["ok"] is True


@pytest.mark.parametrize("filemode", ["false", "true"])
async def test_an_executable_bit_change_is_bound_whatever_core_filemode_says(
    layout: Layout, filemode: str
) -> None:
    git(layout.wt, "config", "core.fileMode", filemode)
    ran = await run(layout, [Step(effect=lambda wt: (wt / "README.md").chmod(0o755))], [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error
    cand = receipt(layout).final_candidate()
    assert cand is not None
    assert [(f.path, f.mode) for f in cand.body.files] == [("README.md", "100755")]
    assert verify(layout.receipt)["ok"] is True


async def test_files_a_converting_checkout_wrote_differently_are_not_changes(
    tmp_path: Path,
) -> None:
    layout = make_layout(tmp_path, {".gitattributes": "*.bat text eol=crlf\n", "run.bat": "a\n"})
    assert (layout.wt / "run.bat").read_bytes() == b"a\r\n"  # the blob holds "a\n"
    ran = await run(layout, [Step(effect=FIX)], [Step()])
    assert ran.outcome.exit_code == 0
    r = receipt(layout)
    cand = r.final_candidate()
    assert cand is not None and [f.path for f in cand.body.files] == ["src/app.py"]
    assert r.base is not None and r.base.entry_divergence is not None
    report = verify(layout.receipt)
    assert report["ok"] is True and report["candidate"]["still_matches"] is True
    # Twin: compared with the base tree alone, the untouched file would count as changed.
    bare = derive(locate(layout.wt), r.base.commit, r.base.tree)
    assert sorted(f.path for f in bare.files) == ["run.bat", "src/app.py"]


def fifo(rel: str) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(wt / rel)

    return effect


def unix_socket(rel: str) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        with socket.socket(socket.AF_UNIX) as s:
            cwd = os.getcwd()
            os.chdir(wt / rel.rpartition("/")[0] if "/" in rel else wt)
            try:
                s.bind(rel.rpartition("/")[2])
            finally:
                os.chdir(cwd)

    return effect


def device(rel: str) -> Effect:
    def effect(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(wt / rel, stat.S_IFCHR | 0o600, os.makedev(1, 3))

    return effect


SPECIALS = {"fifo": fifo, "socket": unix_socket, "device": device}


def _can_mknod(tmp_path: Path) -> bool:
    try:
        os.mknod(tmp_path / "probe", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        return False
    os.unlink(tmp_path / "probe")
    return True


@pytest.mark.parametrize("alone", [True, False], ids=["only-change", "beside-a-fix"])
@pytest.mark.parametrize("kind", sorted(SPECIALS))
async def test_a_special_file_left_by_the_worker_is_unsupported(
    layout: Layout, tmp_path: Path, kind: str, alone: bool
) -> None:
    if kind == "device" and not _can_mknod(tmp_path):
        pytest.skip("this user may not create device nodes (needs CAP_MKNOD)")
    effect = SPECIALS[kind]("src/odd") if alone else chain(FIX, SPECIALS[kind]("src/odd"))
    ran = await run(layout, [Step(effect=effect)], [Step()])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "unsupported-changed-path"
    assert ran.reviewer.calls == []


@pytest.mark.parametrize("kind", sorted(SPECIALS))
async def test_twin_an_ignored_special_file_is_left_alone(
    layout: Layout, tmp_path: Path, kind: str
) -> None:
    if kind == "device" and not _can_mknod(tmp_path):
        pytest.skip("this user may not create device nodes (needs CAP_MKNOD)")
    ran = await run(layout, [Step(effect=chain(FIX, SPECIALS[kind]("build/odd")))], [Step()])
    assert ran.outcome.exit_code == 0, ran.outcome.receipt.error


async def test_verify_fails_a_receipt_whose_files_contradict_its_patch(layout: Layout) -> None:
    await run(layout, [Step(effect=FIX)], [Step()])
    honest = verify(layout.receipt)
    assert honest["ok"] is True and [p["ok"] for p in honest["patches"]] == [True]
    # What a filtered candidate looked like before: the file record hashes other bytes than
    # the patch, while identity, reviews and revision are all made consistent with it.
    r = receipt(layout)
    cand = r.candidate.initial
    assert cand is not None
    files = [
        f.model_copy(update={"sha256": hashlib.sha256(EVIL.encode()).hexdigest()})
        for f in cand.body.files
    ]
    body = cand.body.model_copy(update={"files": files})
    forged_cand = cand.model_copy(update={"body": body, "identity": body.identity()})
    phases = [
        p.model_copy(update={"reviewed_identity": body.identity()}) if p.reviewed_identity else p
        for p in r.phases
    ]
    forged = r.model_copy(
        update={
            "candidate": r.candidate.model_copy(update={"initial": forged_cand}),
            "phases": phases,
        }
    ).closed()
    layout.receipt.write_bytes(receipt_bytes(forged))
    report = verify(layout.receipt)
    assert report["revision"]["ok"] and report["consistency_problems"] == []
    assert report["patches"][0]["problem"] == "patch-does-not-reproduce-bound-files"
    assert report["ok"] is False


async def test_the_base_records_git_settings_and_every_gitattributes(tmp_path: Path) -> None:
    attrs = {".gitattributes": "*.bat text eol=crlf\n", "sub/.gitattributes": "*.bin binary\n"}
    layout = make_layout(tmp_path, attrs)
    git(layout.wt, "config", "core.eol", "lf")
    await run(layout, [Step(effect=FIX)], [Step()])
    base = receipt(layout).base
    assert base is not None
    assert base.branch == "refs/heads/work"
    assert base.git_settings.model_dump() == {
        "autocrlf": None,
        "eol": "lf",
        "filemode": "true",
        "symlinks": None,
    }
    assert [(a.path, a.sha256) for a in base.gitattributes] == [
        (p, hashlib.sha256(t.encode()).hexdigest()) for p, t in sorted(attrs.items())
    ]


async def test_twin_no_gitattributes_and_a_detached_head(layout: Layout) -> None:
    git(layout.wt, "checkout", "-q", "--detach")
    await run(layout, [Step(effect=FIX)], [Step()])
    base = receipt(layout).base
    assert base is not None and base.branch is None and base.gitattributes == []
    assert base.entry_divergence is None


async def test_a_special_file_already_there_is_refused_at_admission(layout: Layout) -> None:
    from tests.agent.test_admission import admitted, refused, req

    os.mkfifo(layout.wt / "pipe")
    await refused(req(layout), "worktree-has-special-file")
    os.rename(layout.wt / "pipe", layout.wt / "build-pipe")
    (layout.wt / "build-pipe").unlink()
    (layout.wt / "build").mkdir()
    os.mkfifo(layout.wt / "build" / "pipe")  # twin: ignored, so not git's business
    await admitted(req(layout))

"""Which worktrees and branches factory runs created in a repository (SPEC M-2).

Every ``factory agent --repo`` run records itself in ``<common dir>/factory/runs/<run>.json``
*before* it creates its branch and worktree, one file per run (written whole, by rename),
so that another run of the same repository can tell that a new ref or worktree
registration appearing while it watches is another run's, not a mutation of its own
(:func:`foreign_labels`), and so that ``factory runs`` can list them.

A record names the process that wrote it. It exempts only what it names: its own branch
(under ``factory/``) and the registration of its own worktree folder, and only while the
writing process is alive or the record says the run has ended. A record cannot exempt the
watching run's own branch or worktree, any branch outside ``factory/``, or a change to a
file that is not a ref or a registration.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, ValidationError

from factory.fsio import atomic_replace
from factory.models import StrictModel

RUNS_DIR = Path("factory") / "runs"
LOCK_NAME = "creation-lock"
RECORD_SCHEMA: Final = "factory.run-record/1"
RUN_ID = re.compile(r"[0-9a-f]{6,64}")
MAX_RECORD_BYTES = 64 * 1024


class RunProcess(StrictModel):
    """The factory process that created the run (identity that survives pid reuse)."""

    pid: int
    start_ticks: int
    boot_id: str


class RunRecord(StrictModel):
    """``factory.run-record/1``: one run factory created in this repository."""

    schema_id: Literal["factory.run-record/1"] = Field(default=RECORD_SCHEMA, alias="schema")
    run_id: str = Field(pattern=r"^[0-9a-f]{6,64}$")
    worktree: str
    branch: str | None
    base_commit: str
    receipt: str
    created_at: str
    process: RunProcess | None
    batch: str | None = None
    task: str | None = None
    ended: bool = False


def own_process() -> RunProcess | None:
    """This process's identity, or None where ``/proc`` cannot tell it."""
    from factory.proc.procfs import boot_id, read_stat

    st, boot = read_stat(os.getpid()), boot_id()
    if st is None or not boot:
        return None
    return RunProcess(pid=st.pid, start_ticks=st.starttime, boot_id=boot)


def runs_dir(common_dir: Path) -> Path:
    return common_dir / RUNS_DIR


def reserve_run(common_dir: Path, record: RunRecord) -> Path:
    """Write ``record`` (atomically; a second record of the same run id is refused)."""
    folder = runs_dir(common_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record.run_id}.json"
    if path.exists():
        raise FileExistsError(path)
    atomic_replace(path, record.canonical() + b"\n")
    return path


def update_run(common_dir: Path, record: RunRecord) -> None:
    """Replace the record of ``record.run_id`` (e.g. once the run has ended)."""
    atomic_replace(runs_dir(common_dir) / f"{record.run_id}.json", record.canonical() + b"\n")


def read_record(path: Path) -> RunRecord | None:
    """The record at ``path``, or None when it is not one (never raises for bad bytes)."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RECORD_BYTES:
            return None
        return RunRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def list_runs(common_dir: Path) -> list[RunRecord]:
    """Every well-formed record, oldest first (by creation time, then run id)."""
    folder = runs_dir(common_dir)
    try:
        names = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return []
    records = [r for r in (read_record(p) for p in names) if r is not None]
    return sorted(records, key=lambda r: (r.created_at, r.run_id))


@contextlib.contextmanager
def creation_lock(common_dir: Path) -> Iterator[None]:
    """One worktree creation at a time per repository (an OS lock: a killed holder's lock
    is released by the kernel). ``git worktree add`` of two runs at once races on the
    repository's registration files."""
    folder = runs_dir(common_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _vouched(record: RunRecord) -> bool:
    """Whether a record may exempt anything: the run ended, or its creator still runs."""
    if record.ended:
        return True
    if record.process is None:
        return False
    from factory.proc.procfs import alive

    return bool(alive(record.process.pid, record.process.start_ticks, record.process.boot_id))


def _gitdir_names(common_dir: Path) -> dict[str, str]:
    """Worktree registration name → the worktree folder git recorded for it."""
    names: dict[str, str] = {}
    folder = common_dir / "worktrees"
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            with contextlib.suppress(OSError):
                gitdir = (entry / "gitdir").read_text(encoding="utf-8").strip()
                names[entry.name] = os.path.dirname(gitdir)
    return names


def foreign_labels(common_dir: Path, own_run: str | None, own_worktree: Path) -> set[bytes]:
    """Label prefixes (as :mod:`factory.agent.control` names them) that belong to *other*
    factory runs of this repository: their branch's ref and reflog, and their worktree's
    registration folder. The watching run's own are never among them."""
    own = os.path.realpath(own_worktree)
    registered = _gitdir_names(common_dir)
    labels: set[bytes] = set()
    for record in list_runs(common_dir):
        if record.run_id == own_run or os.path.realpath(record.worktree) == own:
            continue
        if not _vouched(record):
            continue
        if record.branch is not None and record.branch.startswith("factory/"):
            for top in ("refs/heads/", "logs/refs/heads/"):
                labels.add(os.fsencode(f"common-dir/{top}{record.branch}"))
        theirs = os.path.realpath(record.worktree)
        for name, folder in registered.items():
            if os.path.realpath(folder) == theirs:
                labels.add(os.fsencode(f"common-dir/worktrees/{name}"))
    return labels


_REGISTRY_FILE = re.compile(
    rb"common-dir/factory(/runs(/(create\.lock|publish-lock|[0-9a-f]{6,64}\.json|\.[0-9a-f]{6,64}\.json\.[0-9a-f]{16}\.tmp))?)?"
)


def registry_label(label: bytes) -> bool:
    """Whether ``label`` is the registry's folder, one of its records (or a record's
    temporary file while it is written) or the creation lock: other runs write these while
    this one watches. Any other file there is still a mutation."""
    return _REGISTRY_FILE.fullmatch(label) is not None


def is_foreign(label: bytes, foreign: set[bytes]) -> bool:
    """Whether ``label`` is one of ``foreign`` (or its ``.lock``: git holds it while it
    writes that ref), lies under one of them, or is a folder above one
    (``refs/heads/factory``, ``worktrees``: made when the first such run was)."""
    return any(
        label in (f, f + b".lock") or label.startswith(f + b"/") or f.startswith(label + b"/")
        for f in foreign
    )

"""What ``factory batch run`` refuses before anything runs, each refusal named for what is
wrong (issue 26, tried as a new user): a task's own bad base is that task's, not
``--base``'s; Temporal flags without the Temporal engine are not silently ignored; a
batch folder that cannot be created is not "low disk". Each refusal has its twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.batch.admission import BatchCall, admit
from factory.errors import UsageError
from tests.batch.helpers import DEMO, repo_and_tasks
from tests.support.cli import run_factory


def _call(tasks: Path, repo: Path, out: Path, **kw: object) -> BatchCall:
    fields: dict[str, object] = {"tasks": tasks, "repo": repo, "out": out, "rehearsal": DEMO}
    fields.update({"min_free_mb": 0, **kw})
    return BatchCall(**fields)  # type: ignore[arg-type]


def _with_base(tmp: Path, base: str) -> tuple[Path, Path]:
    repo, _ = repo_and_tasks(tmp, 1)
    tasks = tmp / "based.toml"
    tasks.write_text(
        f'schema = "factory.batch-tasks/1"\n[[tasks]]\nid = "t00"\ntask = "x"\nbase = "{base}"\n'
        '[[tasks]]\nid = "t01"\ntask = "y"\n'
    )
    return repo, tasks


def test_a_task_whose_base_is_missing_is_named_not_the_base_flag(tmp_path: Path) -> None:
    repo, tasks = _with_base(tmp_path, "no-such-branch")
    out = tmp_path / "out"
    proc = run_factory(["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out),
                        "--rehearsal", "demo", "--min-free-mb", "0"])  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.decode()
    assert "factory: base-missing:" in line and "task t00" in line and "no-such-branch" in line
    assert "--base" not in line.split(";")[0] and not out.exists()
    # Twin: the same task naming a base that exists is admitted, pinned to its commit.
    from tests.support.git import git

    head = git(repo, "rev-parse", "HEAD").strip()
    repo2, tasks2 = _with_base(tmp_path / "twin", "HEAD")
    admitted = admit(_call(tasks2, repo2, tmp_path / "twin" / "out"))
    assert len(admitted.bases["t00"]) == 40 and admitted.bases["t00"] == admitted.base_commit
    assert len(head) == 40


@pytest.mark.parametrize(
    "extra",
    [{"temporal": "127.0.0.1:7233"}, {"remote": "origin"}, {"task_queue": "gpu"}],
)
def test_temporal_flags_without_the_temporal_engine_are_refused(
    tmp_path: Path, extra: dict[str, str]
) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    with pytest.raises(UsageError) as caught:
        admit(_call(tasks, repo, tmp_path / "out", **extra))
    assert caught.value.code == "batch-engine-flags" and not (tmp_path / "out").exists()
    # Twin: with --engine temporal the flags are taken (here the next check refuses: there
    # is no remote named origin in this repository).
    with pytest.raises(UsageError) as twin:
        admit(_call(tasks, repo, tmp_path / "out", engine="temporal",
                    **{"temporal": "127.0.0.1:7233", **extra}))  # fmt: skip
    assert twin.value.code == "batch-remote-unknown"


def test_the_cli_refuses_temporal_without_its_engine(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    proc = run_factory(["batch", "run", str(tasks), "--repo", str(repo), "--out",
                        str(tmp_path / "out"), "--temporal", "127.0.0.1:7233"])  # fmt: skip
    assert proc.returncode == 2 and b"factory: batch-engine-flags:" in proc.stderr


def test_a_batch_folder_that_cannot_be_created_is_not_called_low_disk(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    with pytest.raises(UsageError) as caught:
        admit(_call(tasks, repo, Path("/proc/self/factory-batch")))  # a pseudo file system
    assert caught.value.code == "batch-out-unusable" and "cannot create" in caught.value.fact
    admitted = admit(_call(tasks, repo, tmp_path / "out"))  # twin: a writable folder
    assert admitted.tasks and not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".factory-probe-*"))  # the probe leaves nothing


def test_the_disk_floor_is_still_the_disk_floor(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    with pytest.raises(UsageError) as caught:
        admit(_call(tasks, repo, tmp_path / "out", min_free_mb=1 << 40))
    assert caught.value.code == "batch-disk-floor"


def test_verify_and_show_refuse_a_folder_that_is_not_a_batch(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for words in (["verify"], ["show"]):
        for folder in (empty, tmp_path / "missing"):
            proc = run_factory(["batch", *words, str(folder)])
            assert proc.returncode == 2, proc.stderr
            assert b"factory: batch-folder-not-found:" in proc.stderr and proc.stdout == b""
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "batch.sqlite3").write_bytes(b"")
    proc = run_factory(["batch", "verify", str(cut)])
    assert proc.returncode == 2 and b"resume" in proc.stderr
    # Twin: a report that is there but damaged is an integrity failure (exit 4).
    (cut / "batch-report.json").write_text("{}")
    damaged = run_factory(["batch", "verify", str(cut)])
    assert damaged.returncode == 4 and b"factory: batch-report-invalid:" in damaged.stderr


def test_the_builtin_scenario_name_and_a_file_of_that_name(tmp_path: Path) -> None:
    from factory.rehearsal.scenario import scenario_path

    assert scenario_path("demo").read_bytes() == DEMO.read_bytes()
    mine = tmp_path / "demo"
    mine.write_text("{}")
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert scenario_path("demo") == Path("demo")  # a file you named wins
    finally:
        os.chdir(here)
    assert scenario_path("nope") == Path("nope")  # refused later, by name


def test_a_provider_that_cannot_start_refuses_the_batch_not_each_task(tmp_path: Path) -> None:
    """Observed before (issue 26, as a new user): without a login every task was started
    and refused one by one, the folder made, exit 4 and no reason on the terminal. Now the
    provider preflight refuses the batch once: exit 2, nothing created. Fake provider CLIs
    on PATH (a test emulation); twin: logged in, the same batch is admitted."""
    import os

    from tests.support.fake_cli import install_fakes

    repo, tasks = repo_and_tasks(tmp_path, 2)
    fakes = install_fakes(tmp_path / "fakebin")
    fakes.mode(claude="not-logged-in")
    env = {**os.environ, "PATH": f"{fakes.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = tmp_path / "out"
    argv = [
        "batch",
        "run",
        str(tasks),
        "--repo",
        str(repo),
        "--out",
        str(out),
        "--min-free-mb",
        "0",
    ]
    proc = run_factory(argv, env=env)
    assert proc.returncode == 2, proc.stderr
    assert b"factory: provider-not-ready: claude cannot start" in proc.stderr
    assert not out.exists() and fakes.records("run") == []
    fakes.mode()  # twin: with a login the preflight passes (admission only, nothing runs)
    from unittest import mock

    with mock.patch.dict(os.environ, {"PATH": env["PATH"]}):
        admitted = admit(_call(tasks, repo, out, rehearsal=None))
    assert [t.id for t in admitted.tasks] == ["t00", "t01"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0])
@pytest.mark.parametrize("field", ["deadline_s", "task_deadline_s"])
def test_a_deadline_is_a_positive_finite_number(tmp_path: Path, field: str, value: float) -> None:
    """A NaN deadline used to pass ``value <= 0`` and fail every task at launch."""
    repo, tasks = repo_and_tasks(tmp_path, 1)
    with pytest.raises(UsageError) as caught:
        admit(_call(tasks, repo, tmp_path / "out", **{field: value}))
    assert caught.value.code == "batch-limit-invalid" and "finite" in caught.value.fact
    assert not (tmp_path / "out").exists()
    admitted = admit(_call(tasks, repo, tmp_path / "out", **{field: 90.0}))  # the twin
    assert admitted is not None


def test_the_cli_refuses_a_nan_task_deadline(tmp_path: Path) -> None:
    repo, tasks = repo_and_tasks(tmp_path, 1)
    out = tmp_path / "out"
    proc = run_factory(["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out),
                        "--rehearsal", "demo", "--task-deadline-s", "nan"])  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert b"--task-deadline-s: not a positive, finite number" in proc.stderr
    assert not out.exists()

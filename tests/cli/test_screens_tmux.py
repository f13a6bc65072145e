"""Every human-facing screen at 80 and 120 columns in a real terminal (tmux): nothing a
person must read or copy is cut (issue 28). Each screen is compared with itself at a width
where nothing needs to wrap (:mod:`tests.support.screens`): every hash stays whole, every
command stays on one line, no ``…`` appears that the wide screen did not have, and the
expected key lines are there whole."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from factory.cli.main import build_parser
from tests.agent.cli_helpers import agent_args, fake
from tests.batch.helpers import DEMO, repo_and_tasks
from tests.bus.helpers import rich_log
from tests.support.cli import run_factory
from tests.support.git import init_repo
from tests.support.layout import Layout, make_layout
from tests.support.screens import WIDE, cuts, render

FACTORY = str(Path(sys.executable).parent / "factory")


@dataclass(frozen=True)
class Screen:
    name: str
    argv: list[str]
    exit: int
    expect: list[str] = field(default_factory=list)  # key lines that must appear whole
    program: list[str] = field(default_factory=lambda: [FACTORY])


#: ``factory agent``'s closing block at a terminal (the demo ends on the same block),
#: rendered from a finished run's receipt: ``python -c ENDING RECEIPT EXIT``.
ENDING = (
    "import sys; from pathlib import Path; from factory.cli.agent_ending import render; "
    "sys.stdout.buffer.write(render(Path(sys.argv[1]), int(sys.argv[2]), None))"
)


@dataclass(frozen=True)
class Runs:
    tmp: Path
    approved: Layout
    rejected: Layout
    failed: Layout
    tampered: Path
    env: dict[str, str]
    review: Path  # a repository with one review lineage
    lineage: str
    revision: str  # the lineage's current store revision
    bus: Path  # a bus data folder whose log verifies


def _run(tmp: Path, scenario: str) -> Layout:
    layout = make_layout(tmp / scenario)
    proc = fake(scenario, agent_args(layout))
    assert layout.receipt.is_file(), proc.stderr
    return layout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("screens")
    approved, rejected, failed = (_run(tmp, s) for s in ("approve", "reject", "fail"))
    copy = tmp / "tampered"
    shutil.copytree(approved.out, copy)
    evidence = sorted((copy / "receipt.json.evidence").iterdir())[0]
    evidence.write_bytes(evidence.read_bytes() + b"changed\n")
    env = {
        k: os.environ[k]
        for k in ("HOME", "XDG_CONFIG_HOME", "FACTORY_STATE_DIR", "LC_ALL")
        if k in os.environ
    }
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    review = init_repo(tmp / "review", {"README.md": "sample\n"})
    (review / "app.py").write_text("x = 1\n")
    started = run_factory(["review", "start", "--cwd", str(review)])
    assert started.returncode == 0, started.stderr
    rich_log(tmp / "bus")
    made = fake(  # a run factory made in its own worktree, for 'factory runs'
        "approve",
        ["agent", "--repo", str(approved.repo), "--task", "fix add()", "--timeout-ms", "5000",
         "--out", str(tmp / "made.json"), "--worktree-dir", str(tmp / "made-wt")],
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    lineage = json.loads(started.stdout)["lineage"]
    status = json.loads(run_factory(["review", "status", "--cwd", str(review)]).stdout)
    (revision,) = [x["store_revision"] for x in status["lineages"]]
    return Runs(
        tmp,
        approved,
        rejected,
        failed,
        copy / "receipt.json",
        env,
        review,
        lineage,
        revision,
        tmp / "bus",
    )


def _screens(r: Runs) -> list[Screen]:
    ok, rej, bad = r.approved.receipt, r.rejected.receipt, r.failed.receipt
    return [
        Screen("show-approved", ["receipt", "show", str(ok)], 0, ["Run APPROVED — receipt intact"]),
        Screen("show-approved-diff", ["receipt", "show", str(ok), "--diff"], 0),
        Screen("show-rejected", ["receipt", "show", str(rej)], 0),
        Screen("show-failed", ["receipt", "show", str(bad)], 0, ["Run FAILED — receipt intact"]),
        Screen("show-tampered", ["receipt", "show", str(r.tampered)], 4),
        Screen("verify", ["receipt", "verify", str(ok)], 0),
        Screen(
            "apply-refused",
            ["receipt", "apply", str(rej), "--to", str(r.rejected.repo)],
            2,
        ),
        Screen("runs", ["runs", "--repo", str(r.approved.repo)], 0, ["completed APPROVE"]),
        Screen("doctor", ["doctor"], 0),
        Screen("typed-error", ["receipt", "show", str(r.tmp / "missing.json")], 2),
        Screen("review-status", ["review", "status", "--cwd", str(r.approved.wt)], 0),
        Screen("gate-verify-missing", ["gate", "verify", str(r.tmp / "no-runpack")], 4),
        Screen("operator-verify-refused", ["operator", "verify", str(r.tmp / "none.json")], 2),
        Screen(
            "gate-status-refused",
            ["gate", "status", "--run", "nope", "--store", str(r.tmp / "gate.sqlite3")],
            2,
            ["start it with 'factory gate start', or pass the --store that holds it"],
        ),
        Screen(
            "operator-run-refused",
            [
                "operator",
                "run",
                "--repository",
                "o/n",
                "--worktree",
                str(r.approved.wt),
                "--private-key",
                str(r.tmp / "k"),
                "--public-key",
                str(r.tmp / "k.pub"),
                "--ledger",
                str(r.tmp / "ledger"),
                "--out",
                str(r.approved.wt / "op.json"),
            ],
            2,
        ),
        Screen("batch-show-refused", ["batch", "show", str(r.tmp / "no-batch")], 2),
        Screen("review-status-lineage", ["review", "status", "--cwd", str(r.review)], 0),
        Screen(
            "review-show",
            ["review", "show", "--cwd", str(r.review), "--lineage", r.lineage],
            0,
            [r.lineage],
        ),
        Screen(
            "review-recover-refused",
            [
                "review",
                "recover",
                "--cwd",
                str(r.review),
                "--predecessor-lineage",
                r.lineage,
                "--expected-predecessor-revision",
                "sha256:" + "0" * 64,
                "--disposition",
                "invalidated",
                "--reason",
                "screen test",
                "--actor",
                "me",
            ],
            2,
            [f"(it is at {r.revision})"],  # whole: the next command needs it
        ),
        Screen("bus-verify", ["bus", "verify", "--data-dir", str(r.bus)], 0, ["verifies"]),
        Screen("runs-prune-dry", ["runs", "prune", "--repo", str(r.approved.repo), "--dry-run"], 0),
        *(
            Screen(
                f"ending-{kind}",
                [sys.executable, "-c", ENDING, str(lay.receipt), code],
                0,
                program=[],
            )
            for kind, lay, code in (
                ("approved", r.approved, "0"),
                ("rejected", r.rejected, "3"),
                ("failed", r.failed, "4"),
            )
        ),
    ]


def _names() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


_WIDE: dict[str, tuple[int, str]] = {}


def _check(r: Runs, screen: Screen, cols: int) -> None:
    argv = [*screen.program, *screen.argv]
    if screen.name not in _WIDE:  # the reference once per screen, for both widths
        _WIDE[screen.name] = render(r.tmp, argv, cols=WIDE, cwd=r.tmp, env=r.env)
    wide_code, wide = _WIDE[screen.name]
    code, narrow = render(r.tmp, argv, cols=cols, cwd=r.tmp, env=r.env)
    assert (code, wide_code) == (screen.exit, screen.exit), (screen.name, narrow)
    assert narrow.strip(), screen.name
    problems = cuts(narrow, wide, NAMES, commands=not screen.name.endswith("--help"))
    for line in screen.expect:
        if line not in narrow:
            problems.append(f"key line missing or cut: {line}")
    for row in wide.split("\n"):  # every stderr diagnostic, whole, and nothing in it cut
        if row.startswith("factory: ") and row.rstrip() not in narrow:
            problems.append(f"diagnostic cut: {row.rstrip()}")
        if row.startswith("factory: ") and "…" in row:
            problems.append(f"diagnostic with a '…': {row.rstrip()}")
    assert not problems, (
        f"{screen.name} at {cols} columns:\n"
        + "\n".join(problems)
        + (f"\n--- screen ---\n{narrow}")
    )


NAMES = _names()
SCREENS = [
    "show-approved",
    "show-approved-diff",
    "show-rejected",
    "show-failed",
    "show-tampered",
    "verify",
    "apply-refused",
    "runs",
    "doctor",
    "typed-error",
    "review-status",
    "gate-verify-missing",
    "operator-verify-refused",
    "gate-status-refused",
    "operator-run-refused",
    "batch-show-refused",
    "review-status-lineage",
    "review-show",
    "review-recover-refused",
    "bus-verify",
    "runs-prune-dry",
    "ending-approved",
    "ending-rejected",
    "ending-failed",
]


@pytest.mark.parametrize("cols", [80, 120])
@pytest.mark.parametrize("name", SCREENS)
def test_a_screen_is_not_cut(runs: Runs, name: str, cols: int) -> None:
    (screen,) = [s for s in _screens(runs) if s.name == name]
    _check(runs, screen, cols)


@pytest.mark.parametrize("cols", [80, 120])
@pytest.mark.parametrize("command", NAMES)
def test_a_help_screen_is_not_cut(runs: Runs, command: str, cols: int) -> None:
    _check(runs, Screen(f"{command} --help", [command, "--help"], 0), cols)


@pytest.fixture(scope="module")
def batch(runs: Runs) -> Path:
    """A finished batch of two tasks on the rehearsal route (real CLIs, scripted model)."""
    repo, tasks = repo_and_tasks(runs.tmp / "batch", 2)
    out = runs.tmp / "batch" / "out"
    proc = run_factory(
        ["batch", "run", str(tasks), "--repo", str(repo), "--out", str(out), "--jobs", "2",
         "--rehearsal", str(DEMO), "--min-free-mb", "0"],
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.mark.parametrize("cols", [80, 120])
def test_batch_show_is_not_cut(runs: Runs, batch: Path, cols: int) -> None:
    _check(runs, Screen("batch-show", ["batch", "show", str(batch)], 0, ["t00", "t01"]), cols)


def test_the_check_finds_a_cut_hash_and_a_broken_command() -> None:
    """Negative control of the comparison itself."""
    wide = "candidate sha256:" + "ab12" * 16 + "\nnext:  factory receipt apply /tmp/r.json\n"
    cut = (
        "candidate sha256:"
        + "ab12" * 8
        + "\n"
        + "ab12" * 8
        + "\nnext:  factory receipt\napply /tmp/r.json\n"
    )
    problems = cuts(cut, wide)
    assert any(p.startswith("hash ") for p in problems)
    assert any(p.startswith("command cut: factory receipt apply") for p in problems)
    assert cuts(wide, wide) == []
    assert cuts(wide.replace("/tmp/r.json", "/tmp/r…"), wide)

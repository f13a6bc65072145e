"""Benchmark the non-interactive part of ``factory publish`` (issue 15, "Speed").

Target on the 2-core machine: gate start, acquisition *without the user's test command*,
evaluate, accept, and the publish intent ≤ 2 s on the demo repository.

Setup (not timed): the demo's sample repository (``factory.demo.sample``) with a bare
remote, the loopback forge emulation (a test emulation, not a forge), and an agent
receipt from a real ``factory agent`` run on the subscription route with the fake provider
CLIs (so the receipt is publishable) whose worker writes the demo's fix. Each repetition
uses a fresh gate store, so the run is started, not resumed.

Timed, in process, exactly as ``factory publish`` wires it (:func:`factory.pipeline.
publish.pipeline_flow`): the flow's admission (the gate step: start, acquire stage by stage,
evaluate, accept, export the runpack) and its observation (verify the receipt, look the
accepted run up, build the intent, observe remote and forge). The test command (``true``)
runs for real; its provider time is measured and subtracted.

Candidates: ``docs`` (a docs-only change: low risk, no review lens — the whole path to the
intent) and ``demo`` (the demo's own fix of ``stats.py``: medium risk, so the review check
(``factory review validate --gate pre-pr``'s service) runs in-process; with no review of the
candidate it denies, the gate holds at review-approved (``stopped``: the code) and no
intent is built — the figure
is then the gate part up to the accepted hold, and the review gate's own time is shown),
and ``demo-reviewed`` (the same fix after an approved review transaction made on the CLI
beforehand, untimed: the review gate allows, so this is the whole path to the intent of a
medium-risk candidate).

Usage: ``scripts/bench_publish [--reps N]``. One JSON object on stdout (medians, seconds).
Everything runs on 127.0.0.1 in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.bench import isolate as _isolate  # noqa: E402

DOCS = {"docs/median.md": "# median\n\nFor an even count, the mean of the two middle values.\n"}
DEMO_FIX = {
    "stats.py": (
        '"""Small statistics helpers."""\n\n\n'
        "def median(values: list[float]) -> float:\n"
        '    """The middle value of a non-empty list; the mean of the two middle values when\n'
        '    the length is even."""\n'
        "    ordered = sorted(values)\n"
        "    middle = len(ordered) // 2\n"
        "    if len(ordered) % 2 == 0:\n"
        "        return (ordered[middle - 1] + ordered[middle]) / 2\n"
        "    return ordered[middle]\n"
    )
}


def demo_world(tmp: Path, forge: Any, edits: dict[str, str]) -> Any:
    """The demo repository, its worktree, a file:// bare remote and a publishable receipt."""
    from factory.demo.sample import create_sample
    from tests.operator.helpers import REPO, World, env_with, make_keys
    from tests.support.cli import run_factory
    from tests.support.fake_cli import install_fakes
    from tests.support.git import git
    from tests.support.git_remote import bare_from

    tmp.mkdir(parents=True)
    sample = create_sample(tmp)
    bare = bare_from(sample.repo, tmp / "remote.git")
    git(sample.repo, "remote", "add", "origin", bare.as_uri())
    git(sample.repo, "config", "user.name", "Ada Operator")
    git(sample.repo, "config", "user.email", "ada@factory.invalid")
    # The sample leaves the worktree to the run; this bench binds a caller-made one.
    git(sample.repo, "worktree", "add", "-q", "-b", "demo/fix-median", str(sample.worktree))
    fakes = install_fakes(tmp / "fakebin")
    fakes.mode(claude="ok", codex="ok", claude_files=edits)
    (tmp / "out").mkdir()
    receipt = tmp / "out" / "agent.json"
    proc = run_factory(
        ["agent", "--worktree", str(sample.worktree), "--task", "fix median()",
         "--out", str(receipt), "--timeout-ms", "20000"],
        env=env_with(fakes),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    forge.state.repo(REPO).git_remote = bare
    private, public = make_keys(tmp / "keys")
    return World(tmp, sample.repo, sample.worktree, bare, forge, fakes, private, public,
                 tmp / "ledger", receipt)  # fmt: skip


CLEAN_LENS = {"findings": [], "evidence": ["read the whole diff of stats.py"]}


def reviewed(world: Any) -> None:
    """A review transaction of the world's candidate on the CLI, as a user runs it: start,
    the reliability lens (the fake Codex answers with no finding), finalize with its
    evidence run. Not timed: it is the user's step before ``factory publish``."""
    from tests.operator.helpers import env_with
    from tests.support.cli import run_factory

    (world.fakes.bin / "canned.txt").write_text(json.dumps(CLEAN_LENS))
    world.fakes.mode(claude="ok", codex="canned")
    env = env_with(world.fakes, FACTORY_STATE_DIR=str(world.tmp))
    for args in (
        ["start"],
        ["lens", "--lens", "reliability", "--timeout-ms", "120000"],
        ["finalize", "--evidence-run", "--", "true"],
    ):
        proc = run_factory(["review", args[0], "--cwd", str(world.wt), *args[1:]], env=env)
        assert proc.returncode == 0, (args, proc.stdout.decode(), proc.stderr.decode())
    assert json.loads(proc.stdout)["state"] == "approved", proc.stdout.decode()


def timed_providers(marks: dict[str, float], receipts: Any = None) -> Mapping[str, Any]:
    """The default evidence sources (``receipts``: the command's one read of the receipt,
    as ``factory publish`` passes it), with the time spent in each kind summed."""
    from factory.gate.acquire import default_providers

    def wrap(name: str, fn: Any) -> Any:
        async def acquire(args: Mapping[str, Any]) -> Any:
            start = time.perf_counter()
            try:
                return await fn(args)
            finally:
                marks[name] = marks.get(name, 0.0) + time.perf_counter() - start

        return acquire

    return {name: wrap(name, fn) for name, fn in default_providers(receipts=receipts).items()}


def one_rep(world: Any, rep: int) -> dict[str, Any]:
    from factory.agent.receipt_once import pinned
    from factory.errors import FactoryError
    from factory.gate.scenario import load_builtin
    from factory.operator.publish_flow import verified_source
    from factory.operator.session import Held
    from factory.pipeline.publish import pipeline_flow
    from tests.operator.helpers import REPO

    marks: dict[str, float] = {}
    out = world.out(f"publish-{rep}.json")
    start = time.perf_counter()
    source = verified_source(world.agent_receipt, REPO)  # the command's one read (timed)
    read_s = time.perf_counter() - start
    flow, step = pipeline_flow(
        world.client(), REPO, world.agent_receipt, "origin",
        out=out, scenario=load_builtin("publish-candidate"),
        store=world.tmp / f"gate-{rep}.sqlite3", test_argv=["true"],
        providers=timed_providers(marks, pinned(source[1])), held=source,
    )  # fmt: skip
    start = time.perf_counter()
    held: str | None = None
    intent_s = None
    try:
        try:
            flow.admit()
        except Held:
            held = "gate-held"
        except FactoryError as exc:  # e.g. the review check could not answer
            held = exc.code
        gate_s = time.perf_counter() - start + read_s
        if held is None:
            start = time.perf_counter()
            flow.observe()
            intent_s = time.perf_counter() - start
    finally:
        flow.close()  # the publish lock: the next repetition must not find it held
    total = gate_s + (intent_s or 0.0)
    command = marks.get("command", 0.0)
    return {
        "stopped": held,
        "gate_s": gate_s,
        "intent_s": intent_s,
        "test_command_s": command,
        "review_gate_s": marks.get("review-gate"),
        "without_test_command_s": total - command,
        "stages": None if step.record is None else step.record.stages,
        "providers_s": marks,
    }


def bench(
    tmp: Path, forge: Any, name: str, edits: dict[str, str], reps: int, *, review: bool = False
) -> dict[str, Any]:
    world = demo_world(tmp / name, forge, edits)
    if review:
        reviewed(world)
    with world.client() as client:
        world.client = lambda: client  # one connection pool for every repetition
        runs = [one_rep(world, rep) for rep in range(reps)]

    def med(key: str) -> float | None:
        values = [r[key] for r in runs if r[key] is not None]
        return statistics.median(values) if values else None

    return {
        "candidate": name,
        "reps": reps,
        "stopped": runs[-1]["stopped"],
        "stages": runs[-1]["stages"],
        "without_test_command_s": med("without_test_command_s"),
        "max_without_test_command_s": max(r["without_test_command_s"] for r in runs),
        "gate_s": med("gate_s"),
        "intent_s": med("intent_s"),
        "test_command_s": med("test_command_s"),
        "review_gate_s": med("review_gate_s"),
        "providers_s_last_rep": runs[-1]["providers_s"],
        "target_s": 2.0,
    }


def measure(reps: int) -> dict[str, Any]:
    """Both candidates, in a temporary folder removed afterwards."""
    from tests.support.forge import serve_forge

    with tempfile.TemporaryDirectory(prefix="bench-publish-") as name:
        tmp = Path(name)
        (tmp / "home").mkdir()
        _isolate(tmp / "home")
        with serve_forge() as forge:
            results = [
                bench(tmp, forge, "docs", DOCS, reps),
                bench(tmp, forge, "demo", DEMO_FIX, reps),
                bench(tmp, forge, "demo-reviewed", DEMO_FIX, reps, review=True),
            ]
    return {"benchmark": "factory publish, non-interactive part (issue 15)", "results": results}


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench_publish", description=__doc__.split("\n\n")[0] if __doc__ else ""
    )
    parser.add_argument("--reps", type=int, default=5, help="repetitions per candidate")
    print(json.dumps(measure(parser.parse_args().reps), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

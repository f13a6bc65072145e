"""What the tests of the creating form (`factory agent --repo`) share."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from factory.agent.admission import AgentRequest
from factory.agent.creating import prepare
from factory.agent.run import AgentDeps, RunOutcome, run_agent
from factory.gitio.create import WorktreeSpec
from factory.provider_api import Route, SubscriptionRoute
from tests.agent.fakes import FakeAgent, FakeReviewer, Step, write
from tests.support.cli import run_factory
from tests.support.git import init_repo

FIX = write("src/app.py", "def add(a, b):\n    return a + b\n")
FAKE = Path(__file__).with_name("fake_factory.py")
RUN_ID = "0123456789ab"


def draft(tmp_path: Path, repo: Path, **kw: object) -> AgentRequest:
    fields: dict[str, object] = {
        "worktree": repo,
        "task": "fix add()",
        "receipt": tmp_path / "receipt.json",
    }
    fields.update(kw)
    return AgentRequest(**fields)  # type: ignore[arg-type]


class Created:
    """A ``factory agent --repo`` run, in process with scripted fake providers, on a new
    repository ``proj`` under ``tmp``; ``remove``/``verify`` run the real CLI on it."""

    def __init__(
        self,
        tmp: Path,
        agent: list[Step],
        reviewer: list[Step],
        branch: str | None = None,
        route: Route | None = None,
    ) -> None:
        self.repo = init_repo(tmp / "proj", {"src/app.py": "def add(a, b):\n    return a - b\n"})
        self.receipt = tmp / "receipt.json"
        spec = WorktreeSpec(self.repo, branch=branch)
        prelude = prepare(spec, draft(tmp, self.repo), run_id=RUN_ID)
        deps = AgentDeps(
            agent=FakeAgent(agent),
            reviewer=FakeReviewer(reviewer),
            route=route or SubscriptionRoute(),
        )
        self.outcome: RunOutcome = trio.run(
            lambda: run_agent(prelude.planned.request, deps, prelude=prelude)
        )
        self.wt = Path(prelude.record.path)
        self.branch = prelude.record.branch

    def remove(self, receipt: Path | None = None) -> tuple[int, dict[str, object], bytes]:
        proc = run_factory(["worktree", "remove", str(receipt or self.receipt)])
        return proc.returncode, json.loads(proc.stdout or b"{}"), proc.stderr

    def verify(self) -> tuple[int, dict[str, object], bytes]:
        proc = run_factory(["receipt", "verify", str(self.receipt)])
        return proc.returncode, json.loads(proc.stdout), proc.stderr


def completed(tmp: Path) -> Created:
    """A completed run whose candidate fixes ``add()`` in ``src/app.py``."""
    run = Created(tmp, [Step(effect=FIX)], [Step()])
    assert run.outcome.exit_code == 0
    return run

"""What the tests of the creating form (`factory agent --repo`) share."""

from __future__ import annotations

from pathlib import Path

from factory.agent.admission import AgentRequest
from tests.agent.fakes import write

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

"""What the benchmark scripts share: an isolated HOME and git identity, as in the tests."""

from __future__ import annotations

import os
from pathlib import Path


def isolate(home: Path) -> None:
    """A private HOME and pinned git identity, like the test suite's."""
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]
    (home / ".gitconfig-bench").write_text("[init]\n\tdefaultBranch = main\n")
    os.environ.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig-bench"),
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@factory.invalid",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@factory.invalid",
            "FACTORY_STATE_DIR": str(home / "state"),
        }
    )

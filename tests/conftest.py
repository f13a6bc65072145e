"""Suite-wide isolation: a private HOME, pinned git identity, no system/global git config.

Every test runs real git and real subprocesses; nothing may read the developer's own
configuration or write into their home folder.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# A suite started in the background of a non-interactive shell (a CI runner, `cmd &`)
# inherits SIGINT ignored, and every child would inherit that too: the Ctrl-C tests would
# then test nothing. A Python-level handler here is reset to the default by each exec, so
# every child the tests start gets SIGINT's ordinary behaviour.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    templates = tmp_path_factory.mktemp("git-templates")
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith("GIT_"):
            del os.environ[key]
    os.environ.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig-test"),
            "GIT_TEMPLATE_DIR": str(templates),
            "GIT_AUTHOR_NAME": "Factory Test",
            "GIT_AUTHOR_EMAIL": "test@factory.invalid",
            "GIT_COMMITTER_NAME": "Factory Test",
            "GIT_COMMITTER_EMAIL": "test@factory.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            "FACTORY_STATE_DIR": str(tmp_path_factory.mktemp("state")),
            "LC_ALL": "C.UTF-8",
        }
    )
    (home / ".gitconfig-test").write_text(
        '[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n'
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def repo_root() -> Path:
    """The checkout this suite runs from."""
    return Path(__file__).resolve().parents[1]

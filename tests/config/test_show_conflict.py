"""``config show --repo A -- agent --repo B``: two repositories named, refused (issue 28)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cli import run_factory
from tests.support.config_places import Places
from tests.support.git import init_repo


def _env(places: Places) -> dict[str, str]:
    return {**os.environ, "HOME": str(places.xdg.parent), "XDG_CONFIG_HOME": str(places.xdg)}


def test_two_different_repositories_are_refused(places: Places, tmp_path: Path) -> None:
    other = init_repo(tmp_path / "other", {"README": "y\n"})
    for inner in (["--repo", str(other)], [f"--repo={other}"]):
        argv = ["config", "show", "--repo", str(places.repo), "--", "agent", *inner]
        proc = run_factory(argv, cwd=tmp_path, env=_env(places), timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "config-repo-conflict" in err, err
        assert proc.stdout == b"" and "Traceback" not in err


def test_the_same_repository_twice_is_taken(places: Places, tmp_path: Path) -> None:
    places.repository("[timeouts]\nprovider_ms = 9000\n")
    sub = places.repo / "sub"
    sub.mkdir()
    argv = ["config", "show", "--repo", str(places.repo), "--", "agent", "--repo", str(sub)]
    proc = run_factory(argv, cwd=tmp_path, env=_env(places), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"9000" in proc.stdout

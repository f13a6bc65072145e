"""``requirements.lock`` (issue 9 §6): the README's "pinned" is true. The lock satisfies
every dependency ``pyproject.toml`` declares, pins every package with hashes, and the
checkout's ``.venv`` (made by ``scripts/setup``) holds exactly the locked versions."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)(?:\s*;\s*([^\\]+?))?\s*\\?$")


def locked() -> dict[str, tuple[str, str | None, int]]:
    """name -> (version, marker, number of hashes)."""
    out: dict[str, tuple[str, str | None, int]] = {}
    current = None
    for line in (REPO / "requirements.lock").read_text().splitlines():
        match = ENTRY.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            out[current] = (match.group(2), match.group(3), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, marker, hashes = out[current]
            out[current] = (version, marker, hashes + 1)
    return out


def declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    build = (REPO / "scripts" / "build-requirements.in").read_text().splitlines()
    reqs += [line for line in build if line.strip() and not line.startswith("#")]
    return [Requirement(r) for r in reqs]


def test_every_declared_dependency_is_locked_within_its_range() -> None:
    lock = locked()
    for req in declared():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is not in requirements.lock: run scripts/lock"
        assert req.specifier.contains(lock[name][0], prereleases=True), (
            f"{req} does not admit the locked {lock[name][0]}: run scripts/lock"
        )


def test_every_locked_package_is_pinned_with_hashes() -> None:
    lock = locked()
    assert len(lock) > 40
    assert all(hashes >= 1 for _, _, hashes in lock.values())


def test_the_checkout_venv_holds_exactly_the_locked_versions() -> None:
    env = default_environment()
    for name, (version, marker, _) in locked().items():
        if marker is not None and not Requirement(f"x; {marker}").marker.evaluate(env):  # type: ignore[union-attr]
            continue
        assert metadata.version(name) == version, f"{name}: run ./scripts/setup"


def test_the_distribution_has_a_name_of_its_own() -> None:
    # The import name 'factory' is also factory_boy's; the PyPI name 'factory' is taken.
    assert metadata.distribution("factory-receipts").read_text("entry_points.txt")
    names = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    assert "factory" not in names

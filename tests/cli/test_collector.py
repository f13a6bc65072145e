"""factory.cli.collector: a handler's imports run with the collector paused, what they made
is frozen, and the collector is left as the process had it, whatever the block does."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from factory.cli.collector import imports_settled


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.unfreeze()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


@pytest.mark.usefixtures("collector")
def test_the_block_runs_paused_and_the_collector_comes_back_enabled() -> None:
    gc.enable()
    with imports_settled():
        assert not gc.isenabled()
        made = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0 and made  # nothing was imported: nothing frozen


@pytest.mark.usefixtures("collector")
def test_what_exists_is_frozen_only_when_the_block_imported_a_module() -> None:
    sys.modules.pop("colorsys", None)
    with imports_settled():
        import colorsys  # a module nothing else here imports
    assert gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    with imports_settled():
        import colorsys  # noqa: F401  (already imported: nothing new)
    assert gc.get_freeze_count() == frozen


@pytest.mark.usefixtures("collector")
def test_a_collector_the_process_had_disabled_stays_disabled() -> None:
    gc.disable()
    with imports_settled():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_failing_import_still_restores_the_collector() -> None:
    gc.enable()
    with pytest.raises(ModuleNotFoundError), imports_settled():
        import factory.no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert gc.isenabled()


def test_a_command_process_runs_its_work_with_the_collector_on(tmp_path: Path) -> None:
    probe = (
        "import gc, json, sys\n"
        "import factory.review.service as f\n"
        "seen = []\n"
        "real = f.open_context\n"
        "def spy(*a, **k):\n"
        "    seen.append((gc.isenabled(), gc.get_freeze_count() > 0))\n"
        "    return real(*a, **k)\n"
        "f.open_context = spy\n"
        "from factory.cli.main import main\n"
        "code = main(['review', 'finalize', '--cwd', sys.argv[1]])\n"
        "out = {'code': code, 'seen': seen, 'after': gc.isenabled()}\n"
        "sys.stderr.write('\\n' + json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, check=False, timeout=60
    )
    report = json.loads(proc.stderr.decode().rsplit("\n", 1)[-1])
    # the work began (and was refused: not a repository) with the collector on, and the
    # imports before it frozen
    assert report == {"code": 2, "seen": [[True, True]], "after": True}

"""A real browser for tests: Debian's headless Chromium (``./scripts/setup`` installs it).

:func:`dump_dom` returns the DOM as Chromium built it (after parsing, so an injected tag
would show up as an element); :func:`screenshot` writes a PNG of the page and returns its
width and height read from the PNG header.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "chromium-headless-shell"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("headless Chromium is not installed; ./scripts/setup installs it (chromium)")


def _run(page: Path, profile: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",  # tests run as root in CI; the page is our own file
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *flags,
        page.resolve().as_uri(),
    ]
    return subprocess.run(argv, capture_output=True, timeout=120, check=False)


def dump_dom(page: Path, profile: Path) -> str:
    proc = _run(page, profile, "--dump-dom")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout.decode("utf-8")


def screenshot(page: Path, png: Path, profile: Path, *, width: int, height: int) -> tuple[int, int]:
    proc = _run(page, profile, f"--window-size={width},{height}", f"--screenshot={png}")
    assert proc.returncode == 0 and png.is_file(), proc.stderr.decode()[-2000:]
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", head[16:24])
    return w, h

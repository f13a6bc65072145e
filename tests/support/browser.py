"""A real browser for tests: Debian's headless Chromium (``./scripts/setup`` installs it).

:func:`dump_dom` returns the DOM as Chromium built it (after parsing, so an injected tag
would show up as an element); :func:`screenshot` writes a PNG of the page and returns its
width and height read from the PNG header.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
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


def _unfilter(kind: int, row: bytearray, prev: bytes, bpp: int) -> None:
    """Undo one PNG row filter in place (RFC 2083 §6)."""
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + a) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + b) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (a + b) // 2) & 0xFF
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            row[i] = (row[i] + pred) & 0xFF


def pixel(png: Path, x: int, y: int) -> tuple[int, int, int]:
    """The RGB colour at ``(x, y)`` of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    data = png.read_bytes()
    pos, idat, width, bpp = 8, b"", 0, 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width = struct.unpack(">I", body[:4])[0]
            assert body[8] == 8 and body[9] in (2, 6), "8-bit RGB or RGBA only"
            bpp = 3 if body[9] == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytes(stride)
    for row_n in range(y + 1):
        start = row_n * (stride + 1)
        row = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], row, prev, bpp)
        prev = bytes(row)
    r, g, b = prev[x * bpp : x * bpp + 3]
    return r, g, b

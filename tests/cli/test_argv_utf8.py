"""No command takes a command-line word that is not UTF-8 (issue 24 §4): every command
records or prints its arguments as JSON or text, which cannot hold such bytes. Observed
before: ``bus mcp-config --data-dir`` wrote a lone surrogate into the TOML it printed,
``gate verify DIR`` reported it in JSON and exited 4, others exited 1. Each row is refused
before the command runs (exit 2, ``argument-not-utf8``, nothing on stdout); each twin,
the same command with a UTF-8 word, is not refused for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROWS = {
    "bus mcp-config --data-dir": (["bus", "mcp-config", "--client", "codex", "--data-dir"], True),
    "gate verify DIR": (["gate", "verify"], False),
    "gate status --run": (["gate", "status", "--store", "{tmp}/s.sqlite", "--run"], True),
    "receipt verify R": (["receipt", "verify"], False),
    "receipt show R": (["receipt", "show"], False),
    "batch verify DIR": (["batch", "verify"], False),
    "runs --repo": (["runs", "--repo"], True),
    "review finalize -- ARGV": (
        ["review", "finalize", "--cwd", "{tmp}", "--evidence-run", "--", "echo"],
        False,
    ),
}


def _run(words: list[bytes], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "factory", *words], cwd=cwd, capture_output=True, timeout=120,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("row", sorted(ROWS))
def test_a_word_that_is_not_utf8_is_refused_before_the_command(tmp_path: Path, row: str) -> None:
    prefix, flagged = ROWS[row]
    words = [os.fsencode(w.format(tmp=tmp_path)) for w in prefix]
    bad = os.fsencode(tmp_path) + b"/x\xff"
    proc = _run([*words, bad], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(b"factory: argument-not-utf8: ") and proc.stdout == b""
    assert b"\xff" not in proc.stderr and b"\\udcff" not in proc.stderr  # never echoed
    if flagged:
        assert b"the value of " + prefix[-1].encode() in proc.stderr
    twin = _run([*words, os.fsencode(tmp_path) + b"/x\xc3\xbf"], tmp_path)  # the same, UTF-8
    assert b"argument-not-utf8" not in twin.stderr, twin.stderr


def test_digest_keeps_its_own_code_for_a_root_it_cannot_record(tmp_path: Path) -> None:
    odd = os.fsencode(tmp_path) + b"/r\xffoot"
    os.mkdir(odd)
    proc = _run([b"digest", b"--root", odd], tmp_path)
    assert proc.returncode == 2 and b"name-not-utf8" in proc.stderr

"""Render a command's screen in a real terminal (tmux) at a given width and check that
nothing a person must copy or read was cut (issue 28).

:func:`render` runs ``argv`` in a fresh tmux window ``cols`` wide and returns the exit code
and the whole scrollback with the terminal's own soft wraps joined (``capture-pane -J``):
a line the program printed whole reads whole again, while a line break the program (or
rich) inserted stays a break. :func:`cuts` compares that screen with the same command's
screen at a width where nothing needs to wrap, and lists what was cut: a hash (hex of 12
or more) broken into pieces, a command line broken across lines, or an ``…`` the wide
screen did not have.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.tmux import Terminal

WIDE = 400
HEX = re.compile(r"(?<![0-9a-f])[0-9a-f]{12,}(?![0-9a-f])")
FRAGMENT = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{6,}(?![0-9A-Za-z])")
_DONE = "screen-done-exit="
_START = "screen-start-of-output"


def render(
    tmp: Path,
    argv: Sequence[str],
    *,
    cols: int,
    cwd: Path,
    env: Mapping[str, str],
    rows: int = 50,
) -> tuple[int, str]:
    """(exit code, joined scrollback without the command line and the end marker)."""
    line = shlex.join(argv)
    with Terminal(tmp, cols=cols, rows=rows, cwd=cwd, env=env) as term:
        # The markers are typed split in two, so only the shell's output matches them.
        term.type(f'echo "{_START[:6]}""{_START[6:]}"; {line}; echo "{_DONE[:-1]}""=$?"')
        shown = term.wait_for(_DONE, timeout=180, whole=True)
    head, _, tail = shown.rpartition(_DONE)
    code = int(tail.split()[0])
    body = head.rpartition(_START + "\n")[2].split("\n")
    return code, "\n".join(body[:-1])


GIT_VERBS = "add|apply|branch|checkout|commit|diff|log|push|reset|show|stash|status|switch"


def _commands(wide: str, names: Sequence[str]) -> list[str]:
    """The command lines a person would copy: ``factory <command> …`` (or a path ending in
    ``/factory``) or ``git <verb> …``, from there to the end of the line."""
    verbs = "|".join(re.escape(n) for n in names)
    pattern = re.compile(
        rf"(?:^|[\s│|:'`])((?:\S*/)?factory (?:{verbs})\b[^│|]*?|git (?:{GIT_VERBS})\b[^│|]*?)"
        r"\s*[│|]?\s*$"
    )
    found = []
    for row in wide.split("\n"):
        if any(box in row for box in "─━╭╮╰╯┏┓"):
            continue  # a panel's title or a rule, not a command line
        match = pattern.search(row)
        if match:
            found.append(match.group(1).strip())
    return found


def cuts(
    narrow: str, wide: str, names: Sequence[str] = ("receipt", "runs"), *, commands: bool = True
) -> list[str]:
    """What ``narrow`` cut that ``wide`` (the same screen, no wrapping needed) showed;
    ``names``: factory's command names (what makes ``factory X`` a command line);
    ``commands=False`` for argparse's ``--help``, whose usage lines wrap at spaces by design
    (the long-token check still holds: nothing is broken inside a word)."""
    problems = []
    whole = set(HEX.findall(wide))
    flat_narrow = " ".join(narrow.split())
    for token in whole:
        if token not in narrow:
            problems.append(f"hash {token} is not whole")
    for frag in set(FRAGMENT.findall(narrow)) - set(FRAGMENT.findall(wide)):
        problems.append(f"hash piece {frag} (a hash broken across lines)")
    narrow_tokens = set(narrow.split())
    for token in set(wide.split()):  # a path or a flag a person copies, broken inside
        copyable = "/" in token or token.startswith("--")
        if copyable and len(token) >= 12 and token not in narrow_tokens and token not in narrow:
            problems.append(f"token broken: {token}")
    for command in _commands(wide, names) if commands else []:
        if command not in narrow:
            shown = "cut" if " ".join(command.split()) in flat_narrow else "missing"
            problems.append(f"command {shown}: {command}")
    if narrow.count("…") > wide.count("…"):
        problems.append(f"{narrow.count('…') - wide.count('…')} '…' truncation(s) not in wide")
    return problems

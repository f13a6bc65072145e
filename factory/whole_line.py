"""Lines rich must not break: hashes, revisions and commands a person copies (issue 28).

rich wraps and folds text at the console width with hard line breaks, so a 64-hex revision
or a next command at 80 columns came out in two pieces that no copy joins again. A
:class:`Whole` is printed with ``soft_wrap=True`` on its own line: rich leaves it as it is
and the terminal wraps it softly, which a terminal's copy and ``tmux capture-pane -J``
read as the one line it is. Use it only for such lines; prose keeps rich's word wrap.
"""

from __future__ import annotations

from rich.console import Console, RenderableType
from rich.text import Text


class Whole(Text):
    """A :class:`rich.text.Text` that is printed whole on its own line (:func:`show`)."""


def show(console: Console, part: RenderableType) -> None:
    """Print ``part``; a :class:`Whole` without rich's wrapping or folding."""
    console.print(part, soft_wrap=isinstance(part, Whole))


def labelled(label: str, value: str, *, label_style: str = "bold", style: str = "") -> Whole:
    """``label  value`` as one whole line (the label styled, the value inert already)."""
    line = Whole(f"{label}  ", style=label_style)
    line.append(value, style=style)
    return line

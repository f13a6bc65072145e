"""The one display sanitiser: untrusted text becomes inert before a person sees it.

Everything that came from a model, a file name, a task, a forge or git passes through
:func:`inert` (one line) or :func:`inert_lines` (a block) before a terminal, a log line or
a page shows it. The rule is *show, don't drop*: every character that could move the
cursor, recolour the screen, open a link, reorder the line or hide itself is replaced by a
visible escape, so the reader sees that it was there.

Escaped (each as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``):

* C0 controls (U+0000–U+001F) and DEL; with them ESC, so CSI, OSC, DCS, APC, PM and SOS
  sequences cannot start; C1 controls (U+0080–U+009F), which some terminals obey as the
  8-bit forms of the same sequences (``\\x9b`` is CSI);
* bidirectional embeddings, overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069,
  U+200E, U+200F, U+061C), which reorder what is displayed (``evil\\u202etxt.exe``);
* zero-width and other invisible format characters: Unicode category ``Cf`` as a whole
  (U+200B–U+200D, U+2060, U+FEFF, U+00AD, tag characters, …);
* line and paragraph separators (U+2028, U+2029, category ``Zl``/``Zp``);
* lone surrogates (a non-UTF-8 file name decoded with ``surrogateescape``) and unassigned
  or private-use-area code points are left visible only as escapes too;
* the backslash itself (as ``\\\\``), so an escape in the output always means an escaped
  character, never a file literally named ``a\\u202eb``.

Long lines are capped: the first ``limit`` characters of the escaped text are kept and the
rest is summarised as ``… (+N more)``.

This module is pure and has no dependencies beyond the standard library. Rendering with
``rich``: pass the result as a :class:`rich.text.Text` (never as markup), because ``[``
is not escaped here.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

#: Default cap on one displayed line, in characters after escaping.
LINE_LIMIT = 400

_ALWAYS = frozenset(
    [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]
)
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def needs_escape(char: str) -> bool:
    """Whether the sanitiser shows ``char`` only as an escape."""
    point = ord(char)
    if point < 0x20 or 0x7F <= point < 0xA0 or point in _ALWAYS:
        return True
    if point < 0x7F:
        return False
    return unicodedata.category(char) in _ESCAPED_CATEGORIES


def escape_char(char: str) -> str:
    """The visible escape of one character (``\\x1b``, ``\\u202e``, ``\\U000e0001``)."""
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _escape(text: str, keep: frozenset[str]) -> str:
    out: list[str] = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char in keep or not needs_escape(char):
            out.append(char)
        else:
            out.append(escape_char(char))
    return "".join(out)


def cap(text: str, limit: int | None = LINE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the rest summarised as ``… (+N more)``."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} more)"


def inert(text: str, *, limit: int | None = LINE_LIMIT) -> str:
    """One displayable line: every control, bidi, invisible or separator character in
    ``text`` (LF and TAB included) shown as a visible escape, then capped at ``limit``."""
    return cap(_escape(text, frozenset()), limit)


def inert_lines(
    text: str, *, limit: int | None = LINE_LIMIT, max_lines: int | None = None
) -> list[str]:
    """A block of untrusted text as displayable lines.

    Only LF separates lines (CR, U+2028, U+2029, VT and FF are escaped like any other
    control); TAB is kept. Each line is escaped and capped at ``limit``; with
    ``max_lines``, the block is cut and a last line says how many were left out.
    """
    lines = [cap(_escape(line, frozenset("\t")), limit) for line in text.split("\n")]
    if max_lines is not None and len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… ({hidden} more line{'s' if hidden != 1 else ''})"]
    return lines


def safe_line(text: str, *, limit: int | None = LINE_LIMIT) -> str:
    """A message for stderr that may already hold escapes made by the module that raised
    it (``fol\\nder``): left as it is when nothing in it needs escaping (backslashes
    aside), else made :func:`inert` whole. Capped either way."""
    if not any(needs_escape(char) for char in text):
        return cap(text, limit)
    return inert(text, limit=limit)


def error_line(code: str, fact: str, next_step: str, *, kept: str = "") -> str:
    """The one stderr line of a typed error, ``factory: <code>: <fact><kept>; <next step>``:
    the fact (which may quote a path, a provider's or a forge's words) is made inert and
    capped; ``kept`` (a next command) and the next step are made inert but never cut, so
    an instruction is never broken off where it begins (issue 28)."""
    line = f"factory: {code}: {safe_line(fact)}{safe_line(kept, limit=None)}"
    return f"{line}; {safe_line(next_step, limit=None)}" if next_step else line


def is_inert(text: str) -> bool:
    """True when ``text`` would display as itself (nothing to escape, no backslash)."""
    return "\\" not in text and not any(needs_escape(char) for char in text)


def inert_join(parts: Iterable[str], sep: str = ", ", *, limit: int | None = LINE_LIMIT) -> str:
    """Untrusted ``parts`` escaped one by one, joined by the trusted ``sep``, then capped."""
    return cap(sep.join(_escape(part, frozenset()) for part in parts), limit)

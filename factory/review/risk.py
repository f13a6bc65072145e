"""Risk tier, reason codes, lens selection and correction budget, decided once at start
(SPEC R; the reference's ``risk.go`` as refined later: reason codes, shell sources,
executable bits, operational markdown, large docs-only changes).

Pure: the input is the list of changed paths with their modes and numstat counts.

Tiers, first match wins:

1. **high** — ``hot_path`` (a path token ``auth``, ``update``, ``security`` or ``payments``;
   tokens split on ``/ \\ . - _``), ``service_token`` (a source or configuration file, outside
   docs/testdata/fixtures, not a readme, whose name has adjacent tokens ``service``,
   ``token``), ``shell_source`` (``.sh .bash .zsh .ksh``), ``executable_mode`` (the executable
   bit set, cleared, or a new executable file), ``large_change`` (more than 400 authored
   lines, unless docs-only).
2. **low** — ``empty_change``, or ``docs_only``: every non-golden path is documentation
   (``.md .rst .adoc .txt .png .jpg .jpeg .gif``) and none is operational markdown
   (``AGENTS.md``, ``CLAUDE.md``, anything under ``skills/``, ``prompts/``, ``.github/``).
   Docs-only over 400 lines is **medium** with the readability lens (``large_docs_change``).
3. **medium** — ``configuration_change`` or ``executable_change``.

Goldens count zero lines and no tokens, but stay in the identity.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from factory.models import StrictModel
from factory.review.names import (
    BUDGET_CAP,
    LENS_ORDER,
    LensName,
    RiskCode,
    RiskLevel,
)

LARGE_CHANGE_LINES = 400
HOT_TOKENS = frozenset({"auth", "update", "security", "payments"})
DOC_EXT = frozenset({".md", ".rst", ".adoc", ".txt", ".png", ".jpg", ".jpeg", ".gif"})
OPERATIONAL_MD = frozenset({"agents.md", "claude.md", "gemini.md", "copilot-instructions.md"})
OPERATIONAL_DIRS = frozenset({"skills", "prompts", ".github", ".claude", ".codex"})
SHELL_EXT = frozenset({".sh", ".bash", ".zsh", ".ksh"})
SOURCE_EXT = frozenset(
    {
        ".c",
        ".cc",
        ".cpp",
        ".cs",
        ".go",
        ".h",
        ".hpp",
        ".java",
        ".js",
        ".jsx",
        ".kt",
        ".kts",
        ".php",
        ".py",
        ".rb",
        ".rs",
        ".sh",
        ".bash",
        ".zsh",
        ".ts",
        ".tsx",
    }
)
CONFIG_EXT = frozenset({".json", ".yaml", ".yml", ".toml", ".ini", ".env", ".cfg", ".conf"})
CONFIG_NAMES = frozenset(
    {
        "go.mod",
        "go.sum",
        "package.json",
        "package-lock.json",
        "pnpm-lock.yaml",
        "yarn.lock",
        "dockerfile",
        "makefile",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "requirements.txt",
        "cargo.toml",
        "cargo.lock",
        "gemfile",
        "gemfile.lock",
    }
)
NON_SOURCE_DIRS = frozenset({"docs", "doc", "testdata", "fixture", "fixtures", "__fixtures__"})
EXECUTABLE = "100755"
_TOKEN_SPLIT = re.compile(r"[/\\._-]+")


@dataclass(frozen=True, slots=True)
class ChangedPath:
    """One path of the snapshot's diff (``old_mode``/``new_mode`` ``000000`` when absent)."""

    path: str
    old_mode: str
    new_mode: str
    added: int
    deleted: int
    binary: bool
    golden: bool

    @property
    def lines(self) -> int:
        """Authored lines: additions + deletions; binary and golden files count zero."""
        return 0 if self.binary or self.golden else self.added + self.deleted


class RiskReason(StrictModel):
    """A reason code and the first path that raised it (None for count-based reasons)."""

    code: RiskCode
    example: str | None


class Risk(StrictModel):
    """The frozen tier and every reason that applied, in a fixed order."""

    level: RiskLevel
    reasons: tuple[RiskReason, ...]


def _split(path: str) -> tuple[list[str], str, str, str]:
    """Lower-cased (folders, name, stem, suffix); the suffix as ``PurePosixPath`` has it."""
    *dirs, name = path.lower().split("/")
    dot = name.rfind(".")
    if dot <= 0:
        return dirs, name, name, ""
    return dirs, name, name[:dot], name[dot:]


def _ext(path: str) -> str:
    return _split(path)[3]


def _tokens(path: str) -> set[str]:
    return {t for t in _TOKEN_SPLIT.split(path.lower()) if t}


def _is_doc(path: str) -> bool:
    dirs, name, _, suffix = _split(path)
    if name in OPERATIONAL_MD or OPERATIONAL_DIRS.intersection(dirs):
        return False
    if _is_manifest(name, suffix):
        return False  # a dependency manifest or lock file changes what runs
    return suffix in DOC_EXT


def _is_manifest(name: str, suffix: str) -> bool:
    """A listed manifest/lock file, or ``requirements*.txt`` (pip's own naming)."""
    return name in CONFIG_NAMES or (name.startswith("requirements") and suffix == ".txt")


def is_config(path: str) -> bool:
    """Configuration by name (``.env*``, manifests, lock files) or extension."""
    _, name, _, suffix = _split(path)
    return name.startswith(".env") or _is_manifest(name, suffix) or suffix in CONFIG_EXT


def _service_token(c: ChangedPath) -> bool:
    dirs, name, stem, suffix = _split(c.path)
    if c.binary or c.new_mode == "000000" or name.startswith("readme"):
        return False
    if NON_SOURCE_DIRS.intersection(dirs):
        return False
    if suffix not in SOURCE_EXT and not is_config(c.path):
        return False
    for segment in (*dirs, stem):
        words = [w for w in re.split(r"[-_]+", segment) if w]
        if any(a == "service" and b == "token" for a, b in itertools.pairwise(words)):
            return True
    return False


def _exec_mode(c: ChangedPath) -> bool:
    return c.old_mode != c.new_mode and EXECUTABLE in (c.old_mode, c.new_mode)


def _first(paths: list[ChangedPath], test: object) -> str | None:
    for c in paths:
        if test(c):  # type: ignore[operator]
            return c.path
    return None


def classify(changes: list[ChangedPath]) -> Risk:
    """The tier and reasons for ``changes`` (see the module docstring)."""
    authored = [c for c in changes if not c.golden]
    lines = sum(c.lines for c in changes)
    if not changes:
        return Risk(level="low", reasons=(RiskReason(code="empty_change", example=None),))
    docs_only = all(_is_doc(c.path) for c in authored)
    found: list[RiskReason] = []
    checks: list[tuple[RiskCode, object]] = [
        ("hot_path", lambda c: bool(HOT_TOKENS & _tokens(c.path))),
        ("service_token", _service_token),
        ("shell_source", lambda c: _ext(c.path) in SHELL_EXT),
        ("executable_mode", _exec_mode),
    ]
    for code, test in checks:
        example = _first(authored, test)
        if example is not None:
            found.append(RiskReason(code=code, example=example))
    if lines > LARGE_CHANGE_LINES and not docs_only:
        found.append(RiskReason(code="large_change", example=None))
    if found:
        return Risk(level="high", reasons=tuple(found))
    if docs_only:
        if lines > LARGE_CHANGE_LINES:
            return Risk(
                level="medium", reasons=(RiskReason(code="large_docs_change", example=None),)
            )
        return Risk(level="low", reasons=(RiskReason(code="docs_only", example=None),))
    config = _first(authored, lambda c: is_config(c.path))
    if config is not None:
        found.append(RiskReason(code="configuration_change", example=config))
    other = _first(authored, lambda c: not is_config(c.path) and not _is_doc(c.path))
    if other is not None:
        found.append(RiskReason(code="executable_change", example=other))
    return Risk(level="medium", reasons=tuple(found))


def select_lenses(risk: Risk, focus: LensName) -> tuple[LensName, ...]:
    """0, 1 or 4 lenses: low none; medium the focus (readability for large docs); high all."""
    if risk.level == "low":
        return ()
    if risk.level == "high":
        return LENS_ORDER
    if any(r.code == "large_docs_change" for r in risk.reasons):
        return ("readability",)
    return (focus,)


def correction_budget(lines: int) -> int:
    """``min(200, ceil(lines / 2))``, at least 2 when ``lines > 0`` (a one-line replacement
    is one addition plus one deletion)."""
    if lines <= 0:
        return 0
    return max(2, min(BUDGET_CAP, math.ceil(lines / 2)))

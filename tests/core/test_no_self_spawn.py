"""No module of ``factory/`` spawns ``factory`` or ``python -m factory`` (issue 25):
subsystems call each other in-process with typed values. An AST scan of every module;
the documented entries are allowed by exact name, and each rule has a planted offender
that the scan must catch (the negative controls).

The allowed entries (design/batch.md "The attempt's child", design/bus.md "The server is a
protocol, not a hand-off"):

- ``factory.cli.agent_child`` — an attempt's child, handed a typed request document;
- ``factory bus serve`` — the MCP stdio server (the transport is the MCP protocol);
- :func:`factory.usercmd.factory_program` — the words shown to a user or written into a
  git hook / an MCP client configuration (factory itself never runs them);
- :func:`factory.selfexec.factory_argv` — where those words are defined.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: (module, the words after factory_argv's call) that may build factory's own argv.
ARGV_CALLS = {
    ("factory/bus/spawn.py", ("bus", "serve")),
    ("factory/usercmd.py", ()),
}
#: The modules a child may be started with ``-m`` (exact names).
CHILD_MODULES = {"factory.cli.agent_child"}
DEFINES_ARGV = "factory/selfexec.py"
LAUNCHERS = {
    "run", "Popen", "call", "check_call", "check_output", "run_local", "run_process",
    "open_process", "RunSpec", "spawn", "execv", "execve", "execvp", "execvpe", "execl",
    "execlp", "spawnv", "spawnvp", "posix_spawn", "posix_spawnp",
}  # fmt: skip


def _constants(module: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments (how an ``-m`` target is named)."""
    found = {}
    for node in module.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for t in targets:
                    if isinstance(t, ast.Name):
                        found[t.id] = value.value
    return found


def _word(node: ast.expr, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id, f"<{node.id}>")
    return None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _module_target(elts: list[ast.expr], names: dict[str, str]) -> list[str]:
    words = [_word(e, names) for e in elts]
    return [str(words[i + 1]) for i, w in enumerate(words[:-1]) if w == "-m"]


def offences(source: str, rel: str) -> list[str]:
    """What in ``source`` (the module at ``rel``) spawns factory, as ``rel:line why``."""
    tree = ast.parse(source)
    names = _constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node) == "factory_argv":
            words = tuple(_word(a, names) for a in node.args[:2])
            if not any(rel == m and words[: len(w)] == w for m, w in ARGV_CALLS):
                found.append(f"{rel}:{node.lineno} factory_argv{words}")
        if isinstance(node, ast.List | ast.Tuple):
            for target in _module_target(node.elts, names):
                bad = target == "factory" and rel != DEFINES_ARGV
                if bad or (target.startswith("factory.") and target not in CHILD_MODULES):
                    found.append(f"{rel}:{node.lineno} -m {target}")
        if isinstance(node, ast.Call) and _callee(node) in LAUNCHERS:
            for arg in [
                *node.args[:1],
                *(k.value for k in node.keywords if k.arg in ("argv", "args")),
            ]:
                first = arg.elts[0] if isinstance(arg, ast.List | ast.Tuple) and arg.elts else None
                if first is not None and _word(first, names) in ("factory", "factory.exe"):
                    found.append(f"{rel}:{node.lineno} runs ['factory', ...]")
    return found


def test_no_module_of_factory_spawns_factory() -> None:
    scanned, found = 0, []
    for path in sorted((ROOT / "factory").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        found += offences(path.read_text(encoding="utf-8"), rel)
        scanned += 1
    assert scanned > 200  # the scan sees the tree
    assert found == []


def test_the_allowed_entries_are_where_the_docs_say() -> None:
    """The allow-list is not stale: each entry is still used exactly where it is named."""
    child = (ROOT / "factory/batch/child_request.py").read_text(encoding="utf-8")
    assert 'CHILD_MODULE: Final = "factory.cli.agent_child"' in child
    assert (ROOT / "factory/cli/agent_child.py").is_file()
    for module, words in ARGV_CALLS:
        text = (ROOT / module).read_text(encoding="utf-8")
        assert "factory_argv(" + ", ".join(repr(w).replace("'", '"') for w in words) in text


PLANTS = [
    (
        "factory/gate/x.py",
        "from factory.selfexec import factory_argv\nrun(factory_argv('review'))\n",
    ),
    ("factory/bus/spawn.py", "factory_argv('bus', 'other')\n"),  # allowed module, other words
    ("factory/x.py", "import sys\nargv = [sys.executable, '-I', '-m', 'factory', 'agent']\n"),
    ("factory/x.py", "CHILD = 'factory.cli.main'\nargv = ['python', '-m', CHILD]\n"),
    ("factory/x.py", "import subprocess\nsubprocess.run(['factory', 'review', 'validate'])\n"),
    ("factory/x.py", "RunSpec(argv=('factory', 'gate'), env={})\n"),
]


def test_planted_spawns_are_caught() -> None:
    """Negative controls: each planted way of starting factory is found; the documented
    child entry and the receipt's printed command (text, not a spawn) are not."""
    for rel, source in PLANTS:
        assert offences(source, rel), (rel, source)
    allowed = "M = 'factory.cli.agent_child'\nargv = ['python', '-I', '-m', M, 'req.json']\n"
    shown = "cmd = shlex.join(['factory', 'receipt', 'verify', path])\n"
    assert offences(allowed, "factory/x.py") == [] and offences(shown, "factory/x.py") == []

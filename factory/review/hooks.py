"""``factory review install-hooks [--uninstall]``: plain git hooks for repositories that do
not use the pre-commit framework (SPEC R; the framework's hooks are in
``.pre-commit-hooks.yaml`` at the repository root).

Two hooks, ``pre-commit`` and ``pre-push``, in the folder git runs hooks from
(``core.hooksPath`` when a configuration file sets it, else ``<common-dir>/hooks``: linked
worktrees share it). Ownership is recorded in ``<common-dir>/factory/review/hooks.json``
(``factory.review-hooks/1``): for each hook the SHA-256 of what was installed and of what
was there before (always nothing: see below). The rules:

* a hook file factory does not own is never overwritten: install refuses before writing
  anything (``review-hook-not-owned``), naming the file;
* a hook factory installed and the user edited since is left alone and reported, by
  install and by uninstall alike;
* ``--uninstall`` removes exactly the files whose bytes are still what was installed, so
  the folder is as it was before (nothing), and forgets them.

Each hook runs ``<this python> -m factory review validate --gate G``; the pre-push hook
passes the remote name and every pushed commit (``--remote``, ``--pushed-commit``), and
lets a push that sends nothing (deletions only) through.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any, Final

from factory.canonical import sha256_hex
from factory.fsio import atomic_replace, write_exclusive
from factory.gitio.run import run_git
from factory.gitio.worktree import Worktree
from factory.review.errors import ReviewRecordCorrupt
from factory.review.gate_errors import HOOK_NOT_OWNED
from factory.review.store import STORE_PARTS

MANIFEST_SCHEMA: Final = "factory.review-hooks/1"
MARKER: Final = "# factory-review-hook/1"
HOOKS: Final = ("pre-commit", "pre-push")


def hook_script(name: str, python: str) -> bytes:
    """The bytes of hook ``name`` for the interpreter ``python``."""
    head = [
        "#!/bin/sh",
        f"{MARKER} {name}",
        "# Installed by 'factory review install-hooks'; 'factory review install-hooks",
        "# --uninstall' removes it. Denials print the reason and the next legal command.",
    ]
    run = f"exec {shlex.quote(python)} -m factory review validate --gate {name}"
    if name == "pre-commit":
        body = [run]
    else:
        body = [
            'remote="$1"',
            "set --",
            "while read -r local_ref local_oid remote_ref remote_oid; do",
            '  case "$local_oid" in *[!0]*) set -- "$@" --pushed-commit "$local_oid" ;; esac',
            "done",
            '[ "$#" -eq 0 ] && exit 0  # only deletions: nothing is delivered',
            f'{run} --remote "$remote" "$@"',
        ]
    return ("\n".join(head + body) + "\n").encode()


def hooks_dir(wt: Worktree) -> Path:
    """Where git looks for hooks: ``core.hooksPath`` from a configuration file (our own
    ``-c core.hooksPath=/dev/null`` is ignored), else the common dir's ``hooks``."""
    out = run_git(
        wt.root,
        ["config", "--show-scope", "-z", "--get-all", "core.hooksPath"],
        ok_codes=(0, 1),
        what="git config",
    )
    found: str | None = None
    fields = out.split(b"\0")
    for scope, value in zip(fields[0::2], fields[1::2], strict=False):
        if value and scope != b"command":
            found = os.fsdecode(value)
    if found is None:
        return wt.common_dir / "hooks"
    path = Path(os.path.expanduser(found))
    return path if path.is_absolute() else wt.root / path


def _manifest_path(wt: Worktree) -> Path:
    return wt.common_dir.joinpath(*STORE_PARTS[:-1], "hooks.json")


def load_manifest(wt: Worktree) -> dict[str, Any]:
    path = _manifest_path(wt)
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {"schema": MANIFEST_SCHEMA, "hooks": {}}
    except ValueError:
        raise ReviewRecordCorrupt(f"{path} is not JSON (kept as it is)") from None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        raise ReviewRecordCorrupt(f"{path} is not a {MANIFEST_SCHEMA} document (kept as it is)")
    return doc


def _save(wt: Worktree, doc: dict[str, Any]) -> None:
    path = _manifest_path(wt)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    atomic_replace(path, data, mode=0o600)


def _read(path: Path) -> bytes | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return b"\0not a regular file"
    return path.read_bytes()


def _plan(wt: Worktree, folder: Path, doc: dict[str, Any], python: str) -> list[dict[str, Any]]:
    plan = []
    for name in HOOKS:
        path, want = folder / name, hook_script(name, python)
        have = _read(path)
        owned = doc["hooks"].get(name, {}).get("installed_sha256")
        entry = {"hook": name, "path": str(path)}
        if have is None:
            plan.append({**entry, "action": "install", "bytes": want})
        elif owned is not None and sha256_hex(have) == owned:
            action = "already-installed" if have == want else "update"
            plan.append({**entry, "action": action, "bytes": want})
        elif owned is not None or have.startswith(b"#!/bin/sh\n" + MARKER.encode()):
            plan.append({**entry, "action": "left-alone", "reason": "edited after install"})
        else:
            plan.append({**entry, "action": "refuse", "reason": "not installed by factory"})
    return plan


def install(wt: Worktree, python: str = sys.executable) -> dict[str, Any]:
    """Install both hooks (see the module docstring).

    Raises:
        ReviewRefused: ``review-hook-not-owned`` when a hook file is someone else's
            (nothing was written).
    """
    folder, doc = hooks_dir(wt), load_manifest(wt)
    plan = _plan(wt, folder, doc, python)
    foreign = [p for p in plan if p["action"] == "refuse"]
    if foreign:
        raise HOOK_NOT_OWNED(
            f"{foreign[0]['path']} exists and was not installed by factory; it is left as it is"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for p in plan:
        if p["action"] == "install":
            write_exclusive(Path(p["path"]), p["bytes"], mode=0o755)
        elif p["action"] == "update":
            atomic_replace(Path(p["path"]), p["bytes"], mode=0o755)
        if p["action"] in ("install", "update"):
            doc["hooks"][p["hook"]] = {
                "path": p["path"],
                "installed_sha256": sha256_hex(p["bytes"]),
                "previous_sha256": None,
            }
    _save(wt, doc)
    return _report("review/install-hooks", folder, plan)


def uninstall(wt: Worktree) -> dict[str, Any]:
    """Remove the hooks factory installed and nobody edited since; report the rest."""
    folder, doc = hooks_dir(wt), load_manifest(wt)
    plan = []
    for name in HOOKS:
        rec = doc["hooks"].get(name)
        path = Path(rec["path"]) if rec else folder / name
        have = _read(path)
        entry: dict[str, Any] = {"hook": name, "path": str(path)}
        if rec is None:
            plan.append({**entry, "action": "not-installed"})
        elif have is None:
            plan.append({**entry, "action": "already-absent"})
            del doc["hooks"][name]
        elif sha256_hex(have) == rec["installed_sha256"]:
            path.unlink()
            plan.append({**entry, "action": "removed"})
            del doc["hooks"][name]
        else:
            plan.append({**entry, "action": "left-alone", "reason": "edited after install"})
    _save(wt, doc)
    return _report("review/install-hooks --uninstall", folder, plan)


def _report(operation: str, folder: Path, plan: list[dict[str, Any]]) -> dict[str, Any]:
    hooks = [{k: v for k, v in p.items() if k != "bytes"} for p in plan]
    left = [h for h in hooks if h["action"] == "left-alone"]
    return {
        "operation": operation,
        "hooks_dir": str(folder),
        "hooks": hooks,
        "left_alone": len(left),
        "next": [
            "factory review install-hooks --uninstall"
            if "uninstall" not in operation
            else "factory review install-hooks"
        ],
    }

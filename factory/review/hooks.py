"""``factory review install-hooks [--uninstall]``: plain git hooks for repositories that do
not use the pre-commit framework (SPEC R; the framework's hooks are in
``.pre-commit-hooks.yaml`` at the repository root).

Two hooks, ``pre-commit`` and ``pre-push``, in the folder git runs hooks from
(``core.hooksPath`` when a configuration file sets it, else ``<common-dir>/hooks``: linked
worktrees share it). Ownership is recorded in ``<common-dir>/factory/review/hooks.json``
(``factory.review-hooks/1``): for each hook the SHA-256 of what was installed and of what
was there before. The rules:

* a hook factory does not own is never overwritten: it is moved aside byte-for-byte (a
  rename: same bytes, mode and inode) to ``<hook>.factory-previous`` in the same folder,
  its digest, kind and mode recorded as ``previous_*``, and factory's hook *chains* it:
  factory's gate runs first (a denial stops there, so the gate can still deny), then the
  previous hook runs with the same arguments and standard input;
* a hook factory installed and the user edited since is left alone and reported, by
  install and by uninstall alike;
* ``--uninstall`` removes exactly the files whose bytes are still what was installed and
  renames each previous hook back (its recorded mode restored), so the folder is as it
  was before, and forgets them.

Install writes the manifest (the intent, previous digests included) before it moves or
writes anything, so a crash at any point is finished by rerunning the same command.

Each hook runs ``<this python> -I -m factory review validate --gate G`` (isolated: the
repository's own folder is never on the module path); the pre-push hook
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

from factory.documents.canonical import sha256_hex
from factory.fsio import atomic_replace, write_exclusive
from factory.gitio.run import run_git
from factory.gitio.worktree import Worktree
from factory.review.errors import ReviewRecordCorrupt
from factory.review.gate_errors import HOOK_NOT_OWNED
from factory.review.store import STORE_PARTS

MANIFEST_SCHEMA: Final = "factory.review-hooks/1"
MARKER: Final = "# factory-review-hook/1"
HOOKS: Final = ("pre-commit", "pre-push")
ASIDE: Final = ".factory-previous"
_PREVIOUS_KEYS: Final = ("previous_sha256", "previous_kind", "previous_mode", "previous_path")


def hook_script(name: str, python: str, previous: str | None = None) -> bytes:
    """The bytes of hook ``name`` for the interpreter ``python``; with ``previous`` (the
    path of the hook that was there before), factory's gate runs first and then it."""
    head = [
        "#!/bin/sh",
        f"{MARKER} {name}",
        "# Installed by 'factory review install-hooks'; 'factory review install-hooks",
        "# --uninstall' removes it. Denials print the reason and the next legal command.",
    ]
    gate = f"{shlex.quote(python)} -I -m factory review validate --gate {name}"
    if previous is not None:
        head += [
            "# The hook that was here before is kept byte-for-byte and runs after the gate",
            "# allows; uninstall puts it back.",
            f"previous={shlex.quote(previous)}",
        ]
    if name == "pre-commit":
        if previous is None:
            return _lines(head, [f"exec {gate}"])
        return _lines(
            head,
            [f"{gate} || exit $?", 'if [ -x "$previous" ]; then exec "$previous" "$@"; fi'],
        )
    scan = [
        "while read -r local_ref local_oid remote_ref remote_oid; do",
        '  case "$local_oid" in *[!0]*) set -- "$@" --pushed-commit "$local_oid" ;; esac',
    ]
    if previous is None:
        body = ['remote="$1"', "set --", *scan, "done"]
        body += ['[ "$#" -eq 0 ] && exit 0  # only deletions: nothing is delivered']
        return _lines(head, [*body, f'exec {gate} --remote "$remote" "$@"'])
    body = ['remote="$1"', 'url="$2"', 'input="$(cat)"', "set --", *scan]
    body += ["done <<FACTORY_PUSH_INPUT", "$input", "FACTORY_PUSH_INPUT"]
    body += [f'if [ "$#" -gt 0 ]; then {gate} --remote "$remote" "$@" || exit $?; fi']
    body += [
        'if [ -x "$previous" ]; then',
        '  { [ -n "$input" ] && printf \'%s\\n\' "$input"; } | exec "$previous" "$remote" "$url"',
        "fi",
    ]
    return _lines(head, body)


def _lines(head: list[str], body: list[str]) -> bytes:
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
    except (ValueError, RecursionError):
        raise ReviewRecordCorrupt(f"{path} is not JSON (kept as it is)") from None
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    if (
        not isinstance(hooks, dict)
        or doc.get("schema") != MANIFEST_SCHEMA
        or not all(isinstance(v, dict) for v in hooks.values())
    ):
        raise ReviewRecordCorrupt(f"{path} is not a {MANIFEST_SCHEMA} document (kept as it is)")
    manifest: dict[str, Any] = doc
    return manifest


def _save(wt: Worktree, doc: dict[str, Any]) -> None:
    path = _manifest_path(wt)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    atomic_replace(path, data, mode=0o600)


def _read(path: Path) -> bytes | None:
    """The bytes at ``path`` for ownership checks (``None``: nothing there); a symlink or
    other non-regular entry reads as a tagged description, never as a hook of ours."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return b"\0symlink\0" + os.fsencode(os.readlink(path))
    if not stat.S_ISREG(st.st_mode):
        return b"\0not a regular file"
    return path.read_bytes()


def _previous(path: Path, have: bytes) -> dict[str, Any]:
    """What is recorded of a foreign hook before it is moved aside."""
    st = os.lstat(path)
    kind = "symlink" if stat.S_ISLNK(st.st_mode) else "file"
    return {
        "previous_sha256": sha256_hex(have),
        "previous_kind": kind,
        "previous_mode": stat.S_IMODE(st.st_mode),
        "previous_path": str(path.with_name(path.name + ASIDE)),
    }


def _plan_one(name: str, folder: Path, rec: dict[str, Any], python: str) -> dict[str, Any]:
    path = folder / name
    have, owned, prev = _read(path), rec.get("installed_sha256"), rec.get("previous_path")
    entry: dict[str, Any] = {"hook": name, "path": str(path)}
    kept = {k: rec.get(k) for k in _PREVIOUS_KEYS}
    if have is None:
        if prev is None or _read(Path(prev)) is None:
            prev, kept = None, dict.fromkeys(_PREVIOUS_KEYS)
        want = hook_script(name, python, prev)
        return {**entry, "action": "install", "bytes": want, "previous": kept}
    if owned is not None and sha256_hex(have) == owned:
        want = hook_script(name, python, prev)
        action = "already-installed" if have == want else "update"
        return {**entry, "action": action, "bytes": want, "previous": kept}
    if rec.get("previous_sha256") == sha256_hex(have) and _read(Path(prev or path)) is None:
        return {**entry, "action": "chain", "previous": kept}  # resume a crashed install
    if owned is not None or have.startswith(b"#!/bin/sh\n" + MARKER.encode()):
        return {**entry, "action": "left-alone", "reason": "edited after install"}
    if have.startswith(b"\0not a regular file"):
        return {**entry, "action": "refuse", "reason": "not a regular file or symlink"}
    previous = _previous(path, have)
    if _read(Path(previous["previous_path"])) is not None:
        return {**entry, "action": "refuse", "reason": f"{previous['previous_path']} exists"}
    return {**entry, "action": "chain", "previous": previous}


def install(wt: Worktree, python: str = sys.executable) -> dict[str, Any]:
    """Install both hooks, chaining any foreign hook (see the module docstring).

    Raises:
        ReviewRefused: ``review-hook-not-owned`` when a hook cannot be kept byte-for-byte
            (a folder or device where a hook goes, or its aside name taken); nothing was
            written.
    """
    folder, doc = hooks_dir(wt), load_manifest(wt)
    plan = [_plan_one(n, folder, doc["hooks"].get(n, {}), python) for n in HOOKS]
    foreign = [p for p in plan if p["action"] == "refuse"]
    if foreign:
        raise HOOK_NOT_OWNED(
            f"{foreign[0]['path']} is not factory's and cannot be kept aside "
            f"({foreign[0]['reason']}); it is left as it is"
        )
    for p in plan:
        if p["action"] == "chain":
            p["bytes"] = hook_script(p["hook"], python, p["previous"]["previous_path"])
        if p["action"] in ("install", "update", "chain"):
            doc["hooks"][p["hook"]] = {
                **p["previous"],
                "path": p["path"],
                "installed_sha256": sha256_hex(p["bytes"]),
            }
    _save(wt, doc)  # the intent first: a crash below is finished by a rerun
    folder.mkdir(parents=True, exist_ok=True)
    for p in plan:
        if p["action"] == "chain":
            os.rename(p["path"], p["previous"]["previous_path"])
        if p["action"] in ("install", "chain"):
            write_exclusive(Path(p["path"]), p["bytes"], mode=0o755)
        elif p["action"] == "update":
            atomic_replace(Path(p["path"]), p["bytes"], mode=0o755)
    return _report("review/install-hooks", folder, plan)


def _restore(rec: dict[str, Any], path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """Put the previous hook back at ``path`` (a rename over factory's hook)."""
    prev = rec.get("previous_path")
    if prev is None:
        if _read(path) is not None:
            path.unlink()
        return {**entry, "action": "removed"}
    have = _read(Path(prev))
    if have is None:
        return {**entry, "action": "removed", "previous": "missing", "previous_path": prev}
    os.rename(prev, path)
    if rec.get("previous_kind") == "file" and rec.get("previous_mode") is not None:
        os.chmod(path, rec["previous_mode"])
    intact = sha256_hex(have) == rec.get("previous_sha256")
    return {**entry, "action": "restored", "previous": "intact" if intact else "edited"}


def uninstall(wt: Worktree) -> dict[str, Any]:
    """Remove the hooks factory installed and nobody edited since, putting back what was
    there before; report the rest."""
    folder, doc = hooks_dir(wt), load_manifest(wt)
    plan = []
    for name in HOOKS:
        rec = doc["hooks"].get(name)
        path = Path(rec["path"]) if rec else folder / name
        have = _read(path)
        entry: dict[str, Any] = {"hook": name, "path": str(path)}
        if rec is None:
            plan.append({**entry, "action": "not-installed"})
        elif have is None or sha256_hex(have) == rec["installed_sha256"]:
            plan.append(_restore(rec, path, entry))
            del doc["hooks"][name]
        elif sha256_hex(have) == rec.get("previous_sha256"):
            plan.append({**entry, "action": "restored", "previous": "intact"})
            del doc["hooks"][name]  # a crashed install never moved it
        else:
            reason = "edited after install"
            if rec.get("previous_path"):
                reason += f"; the previous hook stays at {rec['previous_path']}"
            plan.append({**entry, "action": "left-alone", "reason": reason})
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

"""The mirror's two remote git calls, ``push`` and ``fetch``: the only place it leaves the
machine, so the only place the repository's configuration could steer a program.

Pinned off on every call: the upload-pack and receive-pack programs (``--upload-pack`` /
``--receive-pack`` and ``remote.<name>.uploadpack|receivepack``), ``core.sshCommand``
(plain ``ssh``), every credential helper and ask-pass program, hooks, and every transport
but ``file``, ``ssh``, ``http`` and ``https`` (so no ``ext::`` command, no remote helper,
no ``core.gitProxy``). A ``url.<base>.insteadOf`` / ``pushInsteadOf`` rule is a rewrite git
applies after every ``-c``, so it cannot be pinned off: when one from the repository's own
configuration would rewrite the remote's URL, the command is refused
(``review-mirror-remote``) before any network call.

INTEGRATOR NOTE: these calls (:func:`push_refs`, :func:`fetch_refs`) are the ones to route
through a central safe remote-git runner once ``factory.gitio`` has one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from factory.display import inert
from factory.gitio.run import run_git, try_git
from factory.review.mirror.errors import MIRROR_REMOTE, refused

_REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_REPO_SCOPES = ("local", "worktree")


def safety(remote: str) -> list[str]:
    """``-c`` settings that keep repository-configured programs off a remote call."""
    pins = {
        "core.sshCommand": "ssh",
        "core.askPass": "",
        "credential.helper": "",
        "core.hooksPath": "/dev/null",
        "protocol.allow": "never",
        "protocol.file.allow": "always",
        "protocol.ssh.allow": "always",
        "protocol.http.allow": "always",
        "protocol.https.allow": "always",
        f"remote.{remote}.uploadpack": "git-upload-pack",
        f"remote.{remote}.receivepack": "git-receive-pack",
        "push.gpgSign": "false",
    }
    args: list[str] = []
    for key, value in pins.items():
        args += ["-c", f"{key}={value}"]
    return args


def _config(root: Path, *args: str) -> list[tuple[str, str]]:
    """(scope, item) pairs of ``git config --show-scope -z ARGS`` (an item is the value,
    or ``key NEWLINE value`` for ``--get-regexp``)."""
    out = run_git(root, ["config", "--show-scope", "-z", *args], ok_codes=(0, 1), what="git config")
    fields = out.split(b"\0")
    return [
        (fields[i].decode(), fields[i + 1].decode("utf-8", "replace"))
        for i in range(0, len(fields) - 1, 2)
    ]


def checked_remote(root: Path, remote: str, *, push: bool) -> str:
    """``remote`` if it is a configured remote whose URL no repository rewrite steers.

    Raises:
        ReviewRefused: ``review-mirror-remote``.
    """
    if not _REMOTE_NAME.fullmatch(remote):
        raise refused(
            MIRROR_REMOTE,
            f"--remote {inert(remote, limit=80)} is not a remote name",
            "git remote -v",
        )
    urls = [v for _, v in _config(root, "--get-all", f"remote.{remote}.url")]
    if push:
        urls += [v for _, v in _config(root, "--get-all", f"remote.{remote}.pushurl")]
    if not urls:
        raise refused(
            MIRROR_REMOTE,
            f"{inert(remote)} is not a configured remote of this repository",
            "git remote -v",
        )
    rules = _config(root, "--get-regexp", r"^url\..*\.(push)?insteadof$")
    for scope, item in rules:
        key, _, prefix = item.partition("\n")
        if scope in _REPO_SCOPES and prefix and any(u.startswith(prefix) for u in urls):
            raise refused(
                MIRROR_REMOTE,
                f"the repository's configuration rewrites the URL of {inert(remote)} "
                f"({inert(key, limit=120)})",
                f"git config --local --unset-all {inert(key, limit=120)}",
            )
    return remote


def push_refs(root: Path, remote: str, refs: Sequence[str]) -> dict[str, str]:
    """Push each ref to the same name on ``remote``, never forced; ref → git's status flag
    (``*`` new, ``=`` up to date, ``!`` rejected) from ``--porcelain``."""
    args = [*safety(remote), "push", "--porcelain", "--no-verify", "--no-follow-tags"]
    args += ["--receive-pack=git-receive-pack", remote, *(f"{r}:{r}" for r in refs)]
    code, out = try_git(root, args)
    flags = {}
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and ":" in parts[1]:
            flags[parts[1].split(":", 1)[1]] = parts[0].strip() or " "
    if code not in (0, 1) or (code == 1 and not flags):
        run_git(root, args, what=f"git push to {inert(remote)}")  # raises with git's words
    return flags


def fetch_refs(root: Path, remote: str, source: str, dest: str) -> None:
    """Fetch every ref under ``source`` on ``remote`` into ``dest`` (a private namespace the
    caller empties afterwards). Raises ``git-failed`` with git's words."""
    args = [*safety(remote), "fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc"]
    args += ["--upload-pack=git-upload-pack", remote, f"+{source}*:{dest}*"]
    run_git(root, args, what=f"git fetch from {inert(remote)}")

"""``factory completion bash|zsh|fish`` (issue 28): each script is printed, parses in its
shell, and completes with the real parser: bash through its completion function with
``COMP_WORDS`` set, fish through ``complete -C``; zsh is checked by ``zsh -n``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_factory
from tests.support.tmux import Terminal

BIN = Path(sys.executable).parent


def _shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; .ci/run installs it (apt-get install {name})")
    return found


def _script(tmp_path: Path, shell: str) -> Path:
    proc = run_factory(["completion", shell])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    path = tmp_path / f"factory.{shell}"
    path.write_bytes(proc.stdout)
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_ARC", "COMP_"))}
    return {**env, "PATH": f"{BIN}:/usr/bin:/bin"}


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    """COMPREPLY of the script's function for ``words`` (the last one being completed)."""
    line = " ".join(words)
    program = (
        f"source {script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}; COMP_LINE={line!r}; COMP_POINT={len(line)}\n"
        "COMP_TYPE=9; _python_argcomplete factory\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(
        [_shell("bash"), "--norc", "--noprofile", "-c", program],
        capture_output=True, timeout=60, check=True, env=_env(),
    )  # fmt: skip
    return [w.strip() for w in proc.stdout.decode().splitlines() if w.strip()]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _script(tmp_path_factory.mktemp("bash"), "bash")


def test_bash_completes_a_command(bash_script: Path) -> None:
    assert _bash_complete(bash_script, ["factory", "rec"]) == ["receipt"]
    assert _bash_complete(bash_script, ["factory", "zzz"]) == []  # twin: nothing matches


def test_bash_completes_a_subcommand_and_its_option(bash_script: Path) -> None:
    assert "show" in _bash_complete(bash_script, ["factory", "receipt", "s"])
    assert _bash_complete(bash_script, ["factory", "receipt", "show", "--di"]) == ["--diff"]
    assert _bash_complete(bash_script, ["factory", "completion", "f"]) == ["fish"]


def test_bash_completes_a_schema_name_not_a_file(bash_script: Path) -> None:
    from factory.documents.registry import REGISTRY

    names = {doc.name for doc in REGISTRY}
    got = _bash_complete(bash_script, ["factory", "schema", "rec"])
    assert got and set(got) <= names and "receipt-verification" in got
    assert _bash_complete(bash_script, ["factory", "schema", "zzz"]) == []  # twin


def test_a_real_tab_in_bash_completes_the_line(tmp_path: Path, bash_script: Path) -> None:
    """The script sourced in an interactive bash in tmux; TAB pressed, as a person does."""
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path)}
    with Terminal(tmp_path, cols=80, env=env) as term:
        term.type(f"source {bash_script}; clear")
        term._run("send-keys", "-l", "factory rec")
        term.key("Tab")
        term.wait_for("$ factory receipt", timeout=60)  # (the pane drops trailing blanks)
        term._run("send-keys", "-l", "show --di")
        term.key("Tab")
        term.wait_for("$ factory receipt show --diff", timeout=60)
        term.key("C-u")  # readline: clear the line
        term._run("send-keys", "-l", "factory zzz")  # twin: nothing to complete
        term.key("Tab")
        term.key("Tab")
        term.type(" # end")
        assert "$ factory zzz # end" in term.wait_for("# end", timeout=60)


def test_fish_completes_with_the_real_parser(tmp_path: Path) -> None:
    script = _script(tmp_path, "fish")
    fish = _shell("fish")
    subprocess.run([fish, "--no-execute", str(script)], check=True, timeout=60)

    def complete(line: str) -> list[str]:
        proc = subprocess.run(
            [fish, "--no-config", "-c", f"source {script}; complete -C {line!r}"],
            capture_output=True, timeout=60, check=True, env=_env(),
        )  # fmt: skip
        return [row.split("\t")[0] for row in proc.stdout.decode().splitlines()]

    assert complete("factory rec") == ["receipt"]
    assert "--diff" in complete("factory receipt show --")
    assert complete("factory zzz") == []


def test_zsh_script_parses(tmp_path: Path) -> None:
    script = _script(tmp_path, "zsh")
    assert b"compdef" in script.read_bytes()
    subprocess.run([_shell("zsh"), "-n", str(script)], check=True, timeout=60)
    broken = tmp_path / "broken.zsh"  # twin: the check does catch a broken script
    broken.write_bytes(script.read_bytes() + b"\nif then fi {\n")
    assert subprocess.run([_shell("zsh"), "-n", str(broken)], capture_output=True).returncode


def test_an_unknown_shell_is_a_usage_error() -> None:
    proc = run_factory(["completion", "powershell"])
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"invalid choice" in proc.stderr


def test_an_ordinary_run_does_not_import_the_completion_library() -> None:
    probe = (
        "import sys\n"
        "from factory.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(str(sorted(m for m in sys.modules if 'argcomplete' in m)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "_ARGCOMPLETE"}
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, timeout=60, check=True, env=env
    )
    assert proc.stderr.decode() == "[]"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_install_line_works_in_a_new_home(tmp_path: Path, shell: str) -> None:
    """The install line from --help, typed in a home folder that has none of the folders
    (a new user met 'No such file or directory' before the lines made them)."""
    from factory.cli.completion_cmd import INSTALL

    home = tmp_path / "home"
    home.mkdir()
    line = INSTALL[shell].split("  (")[0]  # zsh's note on ~/.zshrc is advice, not command
    proc = subprocess.run(
        [_shell("bash"), "--norc", "--noprofile", "-c", line],
        capture_output=True, timeout=60, check=False, env={**_env(), "HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    target = line.rsplit("> ", 1)[1].replace("~", str(home))
    assert Path(target).read_bytes() == run_factory(["completion", shell]).stdout
    bare = tmp_path / "bare"  # the twin: the same line without its mkdir fails there
    bare.mkdir()
    proc = subprocess.run(
        [_shell("bash"), "--norc", "--noprofile", "-c", line.split(" && ", 1)[1]],
        capture_output=True, timeout=60, check=False, env={**_env(), "HOME": str(bare)},
    )  # fmt: skip
    assert proc.returncode != 0 and b"No such file or directory" in proc.stderr

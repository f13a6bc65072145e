"""``factory demo --pipeline``: the whole path on the rehearsal route (SPEC X-1, issue 15).

After the demo's agent cycle (real pinned CLIs, scripted loopback model):

1. **review** — the review service in-process, in the worktree (what ``factory review
   start``, one ``factory review lens --rehearsal`` per selected lens — the real pinned
   Codex against a scripted answer with no finding — and ``factory review finalize
   --evidence-run -- TESTS`` run; no factory child process, no stdout parsed);
2. **decision gate** — ``factory publish``'s own wiring (:func:`factory.pipeline.publish.
   pipeline_flow`) with the shipped scenario ``publish-candidate-rehearsal`` (the built-in
   ``publish-candidate`` with its two rehearsal-blind conditions replaced by ones that say
   it is a rehearsal): factory runs the sample's tests in the worktree, asks the review gate,
   evaluates and accepts by compare-and-swap;
3. **operator** — the operator's own session builds the publish intent from the accepted
   gate head and refuses the rehearsal receipt (``rehearsal-receipt``, stage ``intent``)
   before any prompt, key or forge. The demo holds no key and no forge: the session gets a
   terminal that cannot answer, a public key made for this run only and a forge client
   whose every request fails — none of them is reached, because a rehearsal has nothing to
   authorize;
4. **the chain so far** — ``factory operator verify --deep`` of that refused receipt.

Honest end: the last screen says what was proved (the control path), what was refused and
why, and what a real run does next.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factory.demo.sample import Sample
from factory.demo.sample import _git as sample_git
from factory.display import inert
from factory.review.finalize import finalize
from factory.review.finalize_inputs import FinalizeArgs
from factory.review.lens_service import run_one_lens
from factory.review.service import open_context, start

REPOSITORY = "demo/stats"
SCENARIO_FILE = "publish-candidate-rehearsal.toml"
OUT_NAME = "publish.operator.json"
#: The sample's tests: every ``test_*`` function of ``test_stats.py`` (no test framework
#: needed); ``-B`` so the run writes no byte code into the worktree.
TEST_SOURCE = (
    "import test_stats as t\n"
    "names = sorted(n for n in vars(t) if n.startswith('test_'))\n"
    "for n in names:\n"
    "    vars(t)[n]()\n"
    "print(f'{len(names)} tests passed')\n"
)
TEST_ARGV = [sys.executable, "-B", "-c", TEST_SOURCE]


class NoForge(Exception):
    """Raised by the demo's forge transport: the rehearsal never contacts a forge."""


@dataclass
class Walk:
    """What each step of the walk found (for the last screen)."""

    root: Path
    say: Callable[[str], None]  # one progress line (stderr in the CLI)
    review: dict[str, Any] = field(default_factory=dict)
    review_problem: str | None = None
    gate: dict[str, Any] | None = None
    operator: dict[str, Any] | None = None
    diagnostic: str | None = None
    chain: dict[str, Any] | None = None

    @property
    def out(self) -> Path:
        return self.root / OUT_NAME


def _lens_scenario(root: Path, lens: str) -> Path:
    answer = {
        "findings": [],
        "evidence": ["read the whole diff of stats.py and test_stats.py (scripted answer)"],
        "lens": lens,
        "binding": None,
    }
    doc = {
        "schema": "factory.rehearsal-scenario/1",
        "description": f"factory demo --pipeline: the {lens} lens finds nothing (scripted).",
        "invocations": [
            {
                "role": "reviewer",
                "tool_calls": [{"tool": "shell", "command": "git diff --stat"}],
                "final_message": json.dumps(answer),
            }
        ],
    }
    path = root / f"review-rehearsal-{lens}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def review(walk: Walk, sample: Sample, timeout_ms: int) -> bool:
    """Step 1: a review transaction with scripted lenses; True once it is approved. Each
    step calls the review service in-process with typed values (issue 25)."""
    from factory.errors import FactoryError

    wt = sample.worktree
    step = "factory review start"
    try:
        walk.say("demo: review: factory review start")
        started = start(wt, base_ref=None, focus=None, policy_path=None)
        lenses = [str(entry["lens"]) for entry in started.get("lenses", [])]
        walk.review = {"lineage": started.get("lineage"), "lenses": lenses, "state": None}
        for lens in lenses:
            step = f"factory review lens --lens {lens}"
            walk.say(inert(f"demo: review: {step} --rehearsal (scripted)"))
            _one_lens(walk, wt, lens, timeout_ms)
        step = "factory review finalize"
        walk.say("demo: review: factory review finalize --evidence-run -- <the sample's tests>")
        done, code = finalize(open_context(wt), FinalizeArgs(evidence_run=tuple(TEST_ARGV)))
    except FactoryError as exc:
        walk.review_problem = inert(f"{step} refused: {exc.code}: {exc.fact}", limit=400)
        return False
    walk.review["state"] = done.get("state")
    if code != 0 or walk.review["state"] != "approved":
        walk.review_problem = f"factory review finalize ended {walk.review['state']} (exit {code})"
        return False
    return True


def _one_lens(walk: Walk, wt: Path, lens: str, timeout_ms: int) -> None:
    import providers
    from factory.rehearsal import load_scenario

    scenario = load_scenario(_lens_scenario(walk.root, lens))
    run_one_lens(
        wt, lens, providers.codex_profile(), lineage=None, timeout_ms=timeout_ms,  # type: ignore[arg-type]
        scenario=scenario, incident_fallback=walk.root / "review-incidents",
    )  # fmt: skip


def _prepare_remote(sample: Sample, root: Path) -> None:
    """A local bare clone of the sample as ``origin`` and a repository-local identity:
    what the operator reads to build an intent, and the default branch the pre-pr review
    gate takes as its boundary (no network; nothing is ever pushed to it)."""
    bare = root / "remote.git"
    sample_git(root, "clone", "-q", "--bare", str(sample.repo), str(bare))
    sample_git(sample.repo, "remote", "add", "origin", bare.as_uri())
    sample_git(sample.repo, "config", "user.name", "factory demo")
    sample_git(sample.repo, "config", "user.email", "demo@factory.invalid")


@dataclass
class _SilentTerminal:
    """A terminal that shows what it is given and answers nothing (never reached)."""

    say: Callable[[str], None]

    def write(self, text: str) -> None:
        self.say(inert(text.rstrip("\n")))

    def read_line(self, prompt: str) -> str:
        from factory.operator.tty import PromptClosed

        raise PromptClosed

    def read_secret(self, prompt: str) -> bytes:
        from factory.operator.tty import PromptClosed

        raise PromptClosed


def gate_and_operator(walk: Walk, sample: Sample, receipt: Path) -> None:
    """Steps 2–4: the gate, the operator's refusal, the deep verification."""
    from importlib.resources import files

    import httpx
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from factory.gate.scenario import load_bytes
    from factory.operator.forge_client import Forge
    from factory.operator.publication import require_accepted_gate
    from factory.operator.session import Authority, operate
    from factory.operator.verify import verify_operator_receipt
    from factory.pipeline.deep import verify_chain
    from factory.pipeline.publish import pipeline_flow

    _prepare_remote(sample, walk.root)
    scenario = load_bytes(files("factory.pipeline").joinpath(SCENARIO_FILE).read_bytes(), "toml")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("the rehearsal never contacts a forge", request=request)

    with Forge("https://forge.invalid", None, transport=httpx.MockTransport(refuse)) as forge:
        flow, step = pipeline_flow(
            forge, REPOSITORY, receipt, "origin", out=walk.out, scenario=scenario,
            store=walk.root / "gate.sqlite3", test_argv=TEST_ARGV, base="main",
            progress=lambda line: walk.say("demo: " + line),
            preconditions=(require_accepted_gate,),
        )  # fmt: skip
        # Never used: the refusal comes at the intent, before any prompt or key.
        authority = Authority(
            b"", Ed25519PrivateKey.generate().public_key(), walk.root / "ledger", 60
        )
        result = operate(walk.out, flow, lambda: (_SilentTerminal(walk.say), authority))
    walk.diagnostic = result.diagnostic
    walk.operator = json.loads(result.data)
    if step.record is not None:
        walk.gate = step.record.to_json_value()
    report = verify_operator_receipt(walk.out)
    walk.chain = verify_chain(walk.out, report)


def expected_end(walk: Walk) -> bool:
    """The walk ended where an honest rehearsal must: gate complete, operator refusing the
    rehearsal receipt at the intent, nothing spent, the chain so far verified."""
    op = walk.operator or {}
    return bool(
        walk.gate is not None
        and walk.gate.get("completed") is True
        and op.get("refusal") == {"stage": "intent", "code": "rehearsal-receipt"}
        and op.get("grant") is None
        and walk.chain is not None
        and walk.chain.get("ok") is True
    )

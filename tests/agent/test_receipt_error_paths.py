"""A receipt's error carries no paths (SPEC A-8), even when a provider's message names one
(observed: ``provider-not-found`` quoted the binary's absolute path into the receipt)."""

from __future__ import annotations

from factory.agent.faults import without_paths
from factory.provider_api import PROVIDER_NOT_FOUND
from tests.agent.conftest import Layout
from tests.agent.fakes import Step
from tests.agent.helpers import run


async def test_a_provider_message_with_a_path_reaches_the_receipt_without_it(
    layout: Layout,
) -> None:
    secret_dir = f"{layout.out}/fakebin/claude"
    failure = PROVIDER_NOT_FOUND(f"claude: {secret_dir} is a sh script")
    ran = await run(layout, [Step(raise_exc=failure)], [])
    r = ran.outcome.receipt
    assert (ran.outcome.exit_code, r.status) == (4, "failed")
    assert r.error is not None and r.error.code == "provider-not-found"
    assert r.error.message == f"claude: <path> is a sh script; {PROVIDER_NOT_FOUND.next_step}"


def test_without_paths_keeps_urls_ratios_and_relative_words() -> None:
    # twin: nothing that is not an absolute path is touched
    kept = "see http://127.0.0.1:4318/v1/traces, a/b, 4/5 and ./rel; code 7"
    assert without_paths(kept) == kept
    assert without_paths("cannot read '/home/u/x.json': gone") == "cannot read '<path>': gone"


def test_without_paths_keeps_the_login_slash_command_but_not_a_login_folder() -> None:
    # observed: the provider-auth-required advice "run 'claude' and /login" reached the
    # receipt and stderr as "run 'claude' and <path>"
    advice = "claude has no subscription login here; run 'claude' and /login, then 'factory doctor'"
    assert without_paths(advice) == advice
    assert without_paths("log in with 'claude' (/login) and retry") == (
        "log in with 'claude' (/login) and retry"
    )
    # twin: a real path under /login, or one merely starting with it, is still removed
    assert without_paths("cannot read /login/u/key and /logins") == (
        "cannot read <path> and <path>"
    )

"""Keys (SPEC O-1) and the single-use grant (SPEC O-3): every consume check refuses by name."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factory.operator import keys
from factory.operator.grant import Expected, GrantRefused, GrantScope, SignedGrant, sign
from factory.operator.ledger import LedgerEntry, consume, open_ledger
from tests.operator.helpers import PASSPHRASE, make_keys

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
SCOPE = GrantScope(
    intent_schema="factory.operator-intent/1",
    repository="octo/widgets",
    issue=7,
    snapshot_revision="sha256:" + "1" * 64,
    receipt_revision=None,
    candidate_identity=None,
    branch=None,
    gate_run=None,
    gate_head=None,
)
REV = "sha256:" + "2" * 64


def test_keygen_files_are_exclusive_0600_and_standard(tmp_path: Path) -> None:
    private, public = make_keys(tmp_path)
    for path in (private, public):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert private.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    key = keys.unlock(keys.read_private(private), PASSPHRASE, keys.load_public(public))
    assert key.public_key() == keys.load_public(public)
    if shutil.which("openssl"):
        proc = subprocess.run(
            [
                "openssl",
                "pkey",
                "-in",
                str(private),
                "-passin",
                f"pass:{PASSPHRASE.decode()}",
                "-noout",
            ],
            capture_output=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
    with pytest.raises(keys.KeyRefused) as exc:
        make_keys(tmp_path)
    assert exc.value.code == "key-exists"


def test_the_default_kdf_is_the_stated_one(tmp_path: Path) -> None:
    from asn1crypto import keys as asn1_keys
    from asn1crypto import pem

    pair = keys.KeyPair(tmp_path / "k", tmp_path / "p")
    keys.generate(pair, PASSPHRASE)
    _, _, der = pem.unarmor(pair.private.read_bytes())
    algo = asn1_keys.EncryptedPrivateKeyInfo.load(der)["encryption_algorithm"]
    params = algo["parameters"]
    kdf = params["key_derivation_func"]["parameters"]
    assert algo["algorithm"].native == "pbes2"
    assert kdf["iteration_count"].native == keys.KDF_ITERATIONS == 600_000
    assert kdf["prf"]["algorithm"].native == "sha256"
    assert params["encryption_scheme"]["algorithm"].native == "aes256_cbc"


def test_keygen_is_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("taken")
    with pytest.raises(keys.KeyRefused):
        keys.generate(keys.KeyPair(tmp_path / "k", tmp_path / "p"), PASSPHRASE, iterations=1000)
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize(
    ("phrase", "code"), [(b"short", "passphrase-too-short"), (b"\xff" * 20, "passphrase-invalid")]
)
def test_weak_passphrases_are_refused(phrase: bytes, code: str) -> None:
    with pytest.raises(keys.KeyRefused) as exc:
        keys.check_passphrase(phrase)
    assert exc.value.code == code


def test_wrong_passphrase_and_mismatched_pair(tmp_path: Path) -> None:
    private, public = make_keys(tmp_path / "a")
    _, other_public = make_keys(tmp_path / "b")
    pem = keys.read_private(private)
    with pytest.raises(keys.KeyRefused) as exc:
        keys.unlock(pem, b"wrong passphrase here", keys.load_public(public))
    assert exc.value.code == "passphrase-wrong"
    with pytest.raises(keys.KeyRefused) as exc:
        keys.unlock(pem, PASSPHRASE, keys.load_public(other_public))
    assert exc.value.code == "key-pair-mismatch"


Pair = tuple[Ed25519PrivateKey, Ed25519PublicKey, Path]


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    private, public = make_keys(tmp_path / "keys")
    key = keys.unlock(keys.read_private(private), PASSPHRASE, keys.load_public(public))
    return key, keys.load_public(public), open_ledger(tmp_path / "ledger")


def _consume(
    value: Any,
    public: Ed25519PublicKey,
    ledger: Path,
    now: dt.datetime = NOW,
    scope: GrantScope = SCOPE,
    rev: str = REV,
) -> tuple[SignedGrant, LedgerEntry, Path]:
    return consume(
        value, Expected(rev, "FACTORY_RUN", "octo/widgets", scope), public, ledger, lambda: now
    )


def _grant(key: Ed25519PrivateKey, ttl: int = 120) -> dict[str, Any]:
    expected = Expected(REV, "FACTORY_RUN", "octo/widgets", SCOPE)
    return sign(key, expected, ttl_s=ttl, clock=lambda: NOW).to_json_value()


def test_a_grant_is_spent_exactly_once(pair: Pair) -> None:
    key, public, ledger = pair
    value = _grant(key)
    signed, entry, path = _consume(value, public, ledger)
    assert path.exists() and entry.grant_id == signed.grant.grant_id
    with pytest.raises(GrantRefused) as exc:
        _consume(value, public, ledger)
    assert exc.value.code == "grant-consumed"


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda v: {**v, "extra": 1}, "grant-malformed"),
        (lambda v: {k: x for k, x in v.items() if k != "signature"}, "grant-malformed"),
        (lambda v: {**v, "grant": {**v["grant"], "note": "x"}}, "grant-malformed"),
        (
            lambda v: {**v, "grant": {**v["grant"], "intent_revision": "sha256:" + "3" * 64}},
            "grant-scope-mismatch",
        ),
        (
            lambda v: {**v, "grant": {**v["grant"], "action": "PUBLISH_CANDIDATE"}},
            "grant-scope-mismatch",
        ),
        (
            lambda v: {**v, "grant": {**v["grant"], "scope": {**v["grant"]["scope"], "issue": 8}}},
            "grant-scope-mismatch",
        ),
        (
            lambda v: {**v, "grant": {**v["grant"], "expires_at": "2026-03-01T12:30:00Z"}},
            "grant-ttl-invalid",
        ),
        (
            lambda v: {**v, "grant": {**v["grant"], "grant_id": "factory-grant-other"}},
            "grant-signature-invalid",
        ),
        (lambda v: {**v, "signature": "A" * 86}, "grant-signature-invalid"),
        (lambda v: {**v, "signature": "not base64!"}, "grant-malformed"),
    ],
)
def test_consume_refuses_by_name(pair, mutate, code) -> None:  # type: ignore[no-untyped-def]
    key, public, ledger = pair
    with pytest.raises(GrantRefused) as exc:
        _consume(mutate(_grant(key)), public, ledger)
    assert exc.value.code == code
    assert list(ledger.iterdir()) == []


def test_time_checks(pair: Pair) -> None:
    key, public, ledger = pair
    value = _grant(key, ttl=60)
    for now, code in (
        (NOW + dt.timedelta(seconds=60), "grant-expired"),
        (NOW - dt.timedelta(seconds=30), "clock-not-sane"),
        (dt.datetime(2001, 1, 1, tzinfo=dt.UTC), "clock-not-sane"),
    ):
        with pytest.raises(GrantRefused) as exc:
            _consume(value, public, ledger, now=now)
        assert exc.value.code == code
    _consume(value, public, ledger, now=NOW + dt.timedelta(seconds=59))  # negative control


def test_a_grant_signed_by_another_key_is_refused(pair, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _key, public, ledger = pair
    other_private, other_public = make_keys(tmp_path / "other")
    other = keys.unlock(
        keys.read_private(other_private), PASSPHRASE, keys.load_public(other_public)
    )
    value = _grant(other)
    with pytest.raises(GrantRefused) as exc:
        _consume(value, public, ledger)
    assert exc.value.code == "grant-signature-invalid"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(["grant_id", "intent_revision", "repository", "issued_at", "key"]),
    junk=st.text(min_size=1, max_size=12),
)
def test_any_change_to_a_signed_field_is_refused(pair, field: str, junk: str) -> None:  # type: ignore[no-untyped-def]
    key, public, ledger = pair
    value = _grant(key)
    value["grant"][field] = value["grant"][field] + junk
    with pytest.raises(GrantRefused):
        _consume(value, public, ledger)
    assert list(ledger.iterdir()) == []

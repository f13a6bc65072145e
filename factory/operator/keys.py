"""The operator's Ed25519 key pair on disk (SPEC O-1).

* The private key is an *encrypted PKCS#8* PEM (``ENCRYPTED PRIVATE KEY``, RFC 5958) using
  PBES2 (RFC 8018): PBKDF2-HMAC-SHA256 with :data:`KDF_ITERATIONS` iterations over a random
  16-byte salt derives an AES-256-CBC key. ``cryptography``'s own PKCS#8 writer fixes the
  PBKDF2 cost at 2048 iterations, far below current guidance for a passphrase at rest, so
  the PBES2 envelope is assembled here: the DER structure by ``asn1crypto``, every
  primitive (PBKDF2, AES, padding, the PKCS#8 body) by ``cryptography``. Reading goes
  through ``cryptography``'s loader alone, so a file this module wrote is one any PKCS#8
  reader (``openssl pkey``) accepts.
* The public key is an SPKI PEM (``PUBLIC KEY``).
* Both files are created exclusively with mode 0600, all-or-nothing: if the second cannot
  be written, the first is removed again.

The passphrase is bytes that live only in memory; nothing here logs, stores or echoes it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from asn1crypto import keys as asn1_keys
from asn1crypto import pem as asn1_pem
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from factory.documents.canonical import sha256_hex
from factory.errors import Refused
from factory.fsio import OutputExists, write_exclusive

#: PBKDF2-HMAC-SHA256 iterations (OWASP's 2023 figure for this PRF).
KDF_ITERATIONS: Final = 600_000
KDF_DESCRIPTION: Final = (
    f"PBES2: PBKDF2-HMAC-SHA256, {KDF_ITERATIONS} iterations, 16-byte salt; AES-256-CBC"
)
PASSPHRASE_MIN: Final = 12  # characters
PASSPHRASE_MAX: Final = 1024  # bytes of UTF-8
KEY_FILE_LIMIT: Final = 64 << 10


class KeyRefused(Refused):
    """A key file cannot be created, read or used; nothing was spent (exit 2)."""


_KEYGEN = "create a key pair with 'factory operator keygen'"
KEY_EXISTS = KeyRefused.define("key-exists", "choose new paths; keygen never overwrites a key")
KEY_FOLDER_MISSING = KeyRefused.define("key-folder-missing", "create the folder first")
KEY_MISSING = KeyRefused.define("key-missing", _KEYGEN)
KEY_NOT_ED25519 = KeyRefused.define("key-not-ed25519", _KEYGEN)
KEY_NOT_ENCRYPTED = KeyRefused.define("key-not-encrypted", _KEYGEN)
KEY_PAIR_MISMATCH = KeyRefused.define(
    "key-pair-mismatch", "pass the public key made with this private key"
)
KEY_PATHS_EQUAL = KeyRefused.define("key-paths-equal", "give the two keys different paths")
KEY_UNREADABLE = KeyRefused.define("key-unreadable", "pass the regular PEM file keygen wrote")
KEY_ROUND_TRIP = KeyRefused.define("key-round-trip", "nothing was kept; run keygen again")
_PHRASE = f"choose a passphrase of {PASSPHRASE_MIN} to {PASSPHRASE_MAX} bytes of UTF-8"
PASSPHRASE_INVALID = KeyRefused.define("passphrase-invalid", _PHRASE)
PASSPHRASE_TOO_LONG = KeyRefused.define("passphrase-too-long", _PHRASE)
PASSPHRASE_TOO_SHORT = KeyRefused.define("passphrase-too-short", _PHRASE)
PASSPHRASE_WRONG = KeyRefused.define(
    "passphrase-wrong", "nothing was authorized; run the command again and retype it"
)


@dataclass(frozen=True, slots=True)
class KeyPair:
    """Paths of the two PEM files."""

    private: Path
    public: Path


def _encrypt_pkcs8(key: Ed25519PrivateKey, passphrase: bytes, iterations: int) -> bytes:
    plain = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    salt = secrets.token_bytes(16)
    iv = secrets.token_bytes(16)
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=iterations)
    aes_key = kdf.derive(passphrase)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain) + padder.finalize()
    encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    envelope = asn1_keys.EncryptedPrivateKeyInfo(
        {
            "encryption_algorithm": {
                "algorithm": "pbes2",
                "parameters": {
                    "key_derivation_func": {
                        "algorithm": "pbkdf2",
                        "parameters": {
                            "salt": ("specified", salt),
                            "iteration_count": iterations,
                            "prf": {"algorithm": "sha256"},
                        },
                    },
                    "encryption_scheme": {"algorithm": "aes256_cbc", "parameters": iv},
                },
            },
            "encrypted_data": ciphertext,
        }
    )
    armored: bytes = asn1_pem.armor("ENCRYPTED PRIVATE KEY", envelope.dump())
    return armored


def check_passphrase(passphrase: bytes) -> None:
    """Refuse a passphrase that is too short or too long for a key at rest."""
    try:
        length = len(passphrase.decode("utf-8"))
    except UnicodeDecodeError:
        raise PASSPHRASE_INVALID("the passphrase is not valid UTF-8") from None
    if length < PASSPHRASE_MIN:
        raise PASSPHRASE_TOO_SHORT(
            f"the passphrase is shorter than {PASSPHRASE_MIN} characters; choose a longer one"
        )
    if len(passphrase) > PASSPHRASE_MAX:
        raise PASSPHRASE_TOO_LONG(
            f"the passphrase is longer than {PASSPHRASE_MAX} bytes; choose a shorter one"
        )


def check_new_paths(pair: KeyPair) -> None:
    """Refuse before asking anything when either path is taken or its folder is missing."""
    if os.path.abspath(pair.private) == os.path.abspath(pair.public):
        raise KEY_PATHS_EQUAL("--private-key and --public-key must differ")
    for flag, path in (("--private-key", pair.private), ("--public-key", pair.public)):
        if os.path.lexists(path):
            raise KEY_EXISTS(f"{flag} already exists; choose a new path")
        if not path.parent.is_dir():
            raise KEY_FOLDER_MISSING(f"the folder of {flag} does not exist; create it first")


def generate(pair: KeyPair, passphrase: bytes, *, iterations: int = KDF_ITERATIONS) -> str:
    """Create both files (exclusively, 0600, all-or-nothing); return the key's fingerprint.

    Raises:
        KeyRefused: a path is taken, a folder is missing, or the passphrase is refused.
    """
    check_passphrase(passphrase)
    check_new_paths(pair)
    key = Ed25519PrivateKey.generate()
    private_pem = _encrypt_pkcs8(key, passphrase, iterations)
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # The written private key must unlock with this passphrase before it is trusted.
    loaded = serialization.load_pem_private_key(private_pem, passphrase)
    if not isinstance(loaded, Ed25519PrivateKey) or loaded.public_key() != key.public_key():
        raise KEY_ROUND_TRIP("the encrypted key did not decrypt to the same key")
    try:
        write_exclusive(pair.private, private_pem, mode=0o600)
    except OutputExists:
        raise KEY_EXISTS("--private-key already exists") from None
    try:
        write_exclusive(pair.public, public_pem, mode=0o600)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(pair.private)
        if isinstance(exc, OutputExists):
            raise KEY_EXISTS("--public-key already exists") from None
        raise
    return fingerprint(key.public_key())


def _read_key_file(path: Path, flag: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise KEY_MISSING(f"{flag} does not exist") from None
    except OSError:
        raise KEY_UNREADABLE(f"{flag} cannot be opened (a symlink or unreadable)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise KEY_UNREADABLE(f"{flag} is not a regular file")
        data = os.read(fd, KEY_FILE_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > KEY_FILE_LIMIT:
        raise KEY_UNREADABLE(f"{flag} is too large to be a key")
    return data


def load_public(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in an SPKI PEM file.

    Raises:
        KeyRefused: ``key-missing``, ``key-unreadable``, ``key-not-ed25519``.
    """
    data = _read_key_file(path, "--public-key")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise KEY_UNREADABLE("--public-key is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KEY_NOT_ED25519("--public-key is not an Ed25519 key")
    return key


def read_private(path: Path) -> bytes:
    """The encrypted private key file's bytes (checked for shape, not yet decrypted)."""
    data = _read_key_file(path, "--private-key")
    if b"-----BEGIN ENCRYPTED PRIVATE KEY-----" not in data:
        raise KEY_NOT_ENCRYPTED("--private-key is not an encrypted PKCS#8 PEM")
    return data


def unlock(private_pem: bytes, passphrase: bytes, public: Ed25519PublicKey) -> Ed25519PrivateKey:
    """Decrypt the private key and check it is the pair of ``public``.

    Raises:
        KeyRefused: ``passphrase-wrong``, ``key-not-ed25519``, ``key-pair-mismatch``.
    """
    try:
        key = serialization.load_pem_private_key(private_pem, passphrase)
    except (ValueError, TypeError):
        raise PASSPHRASE_WRONG("the passphrase does not unlock --private-key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KEY_NOT_ED25519("--private-key is not an Ed25519 key")
    if key.public_key() != public:
        raise KEY_PAIR_MISMATCH("--private-key and --public-key are not one pair")
    return key


def public_pem(key: Ed25519PublicKey) -> str:
    """The SPKI PEM text of ``key``."""
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def fingerprint(key: Ed25519PublicKey) -> str:
    """``sha256:<hex>`` of the raw 32-byte public key (what a person compares)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + sha256_hex(raw)

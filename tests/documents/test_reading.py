"""The one strict reader and the safe file read (issue 25): each refusal and its twin."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factory.documents.canonical import canonical_bytes, canonical_bytes_plain
from factory.documents.files import NotRegular, TooLarge, read_document
from factory.documents.reading import JsonRefused, read_json, read_json_plain, read_own


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


NESTED_32 = _nested(32)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"a": 1, "a": 1}', "duplicate"),
        (b"[NaN]", "constant"),
        (b"[Infinity]", "constant"),
        (b"[-Infinity]", "constant"),
        (b'"\xff"', "utf8"),
        (b"[" * 33 + b"]" * 33, "depth"),
        (b"[" * 100_000 + b"]" * 100_000, "depth"),
        (b'["\\ud800"]', "surrogate"),
        (b'{"\\udfff": 1}', "surrogate"),
        (b"[1] [2]", "syntax"),
        (b"", "syntax"),
        (b"x" * 1001, "size"),
    ],
)
def test_each_rule_refuses_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(JsonRefused) as caught:
        read_json(data, limit=1000 if reason != "depth" else 10**6)
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b'{"a": 1, "b": 1}', {"a": 1, "b": 1}),
        (b'["NaN"]', ["NaN"]),
        ('"é"'.encode(), "é"),
        (b"[" * 32 + b"]" * 32, NESTED_32),  # exactly the depth limit
        (b'["\\ud83d\\ude00"]', ["\U0001f600"]),  # a surrogate *pair* is one character
        (b" 1 ", 1),
    ],
)
def test_twins_read(data: bytes, value: object) -> None:
    assert read_json(data, limit=1000) == value


def test_size_is_checked_at_the_limit() -> None:
    assert read_json(b"1" * 10, limit=10) == 1111111111
    with pytest.raises(JsonRefused, match="larger than 9 bytes"):
        read_json(b"1" * 10, limit=9)


def test_decimals_are_exact_and_lone_surrogates_may_be_left_to_the_caller() -> None:
    assert read_json(b"[1.10]", limit=99, decimals=True) == [Decimal("1.10")]
    assert read_json(b"[1.10]", limit=99) == [1.1]
    assert read_json(b'["\\ud800"]', limit=99, lone_surrogates=True) == ["\ud800"]


def test_read_own_only_turns_hostile_nesting_into_a_refusal() -> None:
    assert read_own(b'{"a": 1, "a": 2}') == {"a": 2}  # factory's own bytes: as written
    with pytest.raises(JsonRefused) as caught:
        read_own(b"[" * 100_000 + b"]" * 100_000)
    assert caught.value.reason == "depth"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_plain_flag_and_fast_writer_agree_with_rfc8785(value: object) -> None:
    try:
        expected = canonical_bytes(value)
    except Exception:  # a lone surrogate: the reader refuses it first
        return
    decoded, plain = read_json_plain(expected, limit=1 << 20)
    assert canonical_bytes_plain(decoded, plain=plain) == expected
    assert canonical_bytes_plain(value) == expected


def test_read_document_reads_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(b"x" * 10)
    assert read_document(path, limit=10) == b"x" * 10
    with pytest.raises(TooLarge):
        read_document(path, limit=9)


def test_read_document_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular):
        read_document(fifo, limit=10)  # no writer: a blocking open would hang here


def test_read_document_never_follows_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"{}")
    (tmp_path / "link").symlink_to("real")
    assert read_document(tmp_path / "real", limit=10) == b"{}"
    with pytest.raises(OSError):
        read_document(tmp_path / "link", limit=10)
    with pytest.raises(NotRegular):
        read_document(tmp_path, limit=10)


def test_the_documents_core_and_the_hook_path_import_no_pydantic() -> None:
    probe = (
        "import sys\n"
        "import factory.documents.canonical, factory.documents.reading\n"
        "import factory.documents.files, factory.documents.emit\n"
        "import factory.review.documents, factory.review.gates.validate\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core'))\n"
        "assert not bad, bad\n"
        "assert 'decimal' not in sys.modules\n"  # only the gate reads exact decimals
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    # Negative control: the probe does see pydantic when a model module is imported.
    twin = probe.replace("import sys\n", "import sys\nimport factory.models\n")
    twin = twin.replace("assert 'decimal' not in sys.modules\n", "")
    proc = subprocess.run([sys.executable, "-c", twin], capture_output=True, check=False)
    assert proc.returncode != 0 and b"pydantic" in proc.stderr

"""Risk tiers with reason codes, lens selection and the correction budget."""

from __future__ import annotations

import pytest

from factory.review.errors import ReviewInputInvalid
from factory.review.policy import default_policy, glob_match, parse_policy
from factory.review.risk import ChangedPath, classify, correction_budget, select_lenses


def cp(
    path: str,
    added: int = 5,
    deleted: int = 0,
    old: str = "100644",
    new: str = "100644",
    binary: bool = False,
    golden: bool = False,
) -> ChangedPath:
    return ChangedPath(path, old, new, added, deleted, binary, golden)


@pytest.mark.parametrize(
    ("changes", "level", "codes"),
    [
        ([], "low", ["empty_change"]),
        ([cp("docs/guide.md")], "low", ["docs_only"]),
        ([cp("docs/guide.md", added=401)], "medium", ["large_docs_change"]),
        ([cp("AGENTS.md")], "medium", ["executable_change"]),
        ([cp("prompts/review.md")], "medium", ["executable_change"]),
        ([cp("src/parser.py")], "medium", ["executable_change"]),
        ([cp("pyproject.toml")], "medium", ["configuration_change"]),
        ([cp("src/auth/login.py")], "high", ["hot_path"]),
        ([cp("src/payments_api.py")], "high", ["hot_path"]),
        ([cp("src/service_token.py")], "high", ["service_token"]),
        ([cp("docs/service_token.py")], "medium", ["executable_change"]),
        ([cp("scripts/deploy.sh")], "high", ["shell_source"]),
        ([cp("bin/tool", old="100644", new="100755", added=0)], "high", ["executable_mode"]),
        ([cp("bin/new", old="000000", new="100755")], "high", ["executable_mode"]),
        ([cp("src/a.py", added=300), cp("src/b.py", added=101)], "high", ["large_change"]),
        ([cp("src/a.py", added=400)], "medium", ["executable_change"]),
        (
            [cp("t/testdata/golden/x.golden", added=5000, golden=True), cp("src/a.py")],
            "medium",
            ["executable_change"],
        ),
        ([cp("logo.png", binary=True)], "low", ["docs_only"]),
        ([cp("requirements.txt")], "medium", ["configuration_change"]),
        ([cp("sub/Requirements-dev.txt")], "medium", ["configuration_change"]),
        ([cp("yarn.lock")], "medium", ["configuration_change"]),
        ([cp("notes.txt")], "low", ["docs_only"]),
    ],
)
def test_risk_tiers_and_reason_codes(
    changes: list[ChangedPath], level: str, codes: list[str]
) -> None:
    risk = classify(changes)
    assert risk.level == level
    assert [r.code for r in risk.reasons] == codes


def test_golden_lines_stay_out_of_the_authored_count() -> None:
    golden = cp("t/testdata/golden/x.golden", added=5000, golden=True)
    assert golden.lines == 0 and cp("a.bin", added=9, binary=True).lines == 0
    assert classify([golden, cp("src/a.py", added=10)]).level == "medium"


@pytest.mark.parametrize(
    ("lines", "budget"),
    [
        (0, 0),
        (1, 2),
        (2, 2),
        (3, 2),
        (5, 3),
        (40, 20),
        (120, 60),
        (399, 200),
        (400, 200),
        (900, 200),
    ],
)
def test_budget_is_min_200_ceil_half_with_a_floor_of_two(lines: int, budget: int) -> None:
    assert correction_budget(lines) == budget


def test_lens_selection_is_0_1_or_4_in_canonical_order() -> None:
    assert select_lenses(classify([cp("a.md")]), "reliability") == ()
    assert select_lenses(classify([cp("a.py")]), "resilience") == ("resilience",)
    assert select_lenses(classify([cp("a.md", added=500)]), "reliability") == ("readability",)
    assert select_lenses(classify([cp("auth.py")]), "risk") == (
        "risk",
        "resilience",
        "readability",
        "reliability",
    )


@pytest.mark.parametrize(
    ("pattern", "path", "match"),
    [
        ("**/testdata/golden/*.golden", "testdata/golden/a.golden", True),
        ("**/testdata/golden/*.golden", "pkg/x/testdata/golden/a.golden", True),
        ("**/testdata/golden/*.golden", "pkg/testdata/golden/sub/a.golden", False),
        ("fixtures/*.json", "fixtures/a.json", True),
        ("fixtures/*.json", "fixtures/a/b.json", False),
    ],
)
def test_golden_globs(pattern: str, path: str, match: bool) -> None:
    assert glob_match(pattern, path) is match


def test_policy_is_strict_and_hashed_by_its_bytes() -> None:
    raw = b'{"schema": "factory.review-policy/1", "golden_globs": ["snap/**/*.txt"]}'
    p = parse_policy(raw)
    assert p.is_golden("snap/a/b.txt") and not p.is_golden("src/a.txt")
    assert p.hash != parse_policy(raw + b" ").hash != default_policy().hash
    for bad in (
        b'{"schema": "factory.review-policy/1", "golden_globs": [], "x": 1}',
        b'{"schema": "factory.review-policy/1", "golden_globs": ["/abs"]}',
        b"[]",
    ):
        with pytest.raises(ReviewInputInvalid):
            parse_policy(bad)

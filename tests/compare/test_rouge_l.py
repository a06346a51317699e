"""rouge_l_f against the rouge==1.0.1 package (test-only dependency), on real NesTools values."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge import Rouge

from toolmend.compare._rouge import rouge_l_f, rouge_l_scores

_ROUGE = Rouge()


def reference(candidate: str, ref: str) -> tuple[float, float, float]:
    try:
        s = _ROUGE.get_scores(candidate, ref)[0]["rouge-l"]
    except ValueError:
        return (0.0, 0.0, 0.0)
    return (s["f"], s["p"], s["r"])


@pytest.mark.parametrize(
    ("cand", "ref"),
    [
        ("", "x"),
        ("x", ""),
        ("...", "a"),
        ("a", "a"),
        ("A", "a"),
        ("3.5", "3.5"),
        ("3.5", "35"),
        ("a b", "b a"),
        ("a a a", "a"),
        ("a. ", "a"),
        ("hello, world!", "hello world"),
        ("New  York\tCity", "New York City"),
        ("2024-05-01", "May 1st, 2024"),
        ("the cat sat. on the mat", "on the mat the cat sat"),
    ],
)
def test_edge_cases_match_the_package(cand: str, ref: str) -> None:
    assert rouge_l_scores(cand, ref) == reference(cand, ref)


def test_empty_text_scores_zero_where_the_package_raises() -> None:
    with pytest.raises(ValueError):
        _ROUGE.get_scores("", "x")
    assert rouge_l_f("", "x") == 0.0
    assert rouge_l_f("x", "...") == 0.0


def _gold_strings(data_dir: Path) -> list[str]:
    out: list[str] = []
    with (data_dir / "nestools" / "test_data.jsonl").open() as f:
        for line in f:
            for call in json.loads(line)["call"]:
                out.extend(
                    v for v in call["parameters"].values() if isinstance(v, str) and "API_call" not in v
                )
    return out


def test_matches_the_package_on_nestools_gold_values(data_dir: Path) -> None:
    values = _gold_strings(data_dir)
    assert len(values) > 3000
    rnd = random.Random(7)
    pairs = [(v, v) for v in values[:300]]
    pairs += [(rnd.choice(values), rnd.choice(values)) for _ in range(800)]
    # near misses: a dropped word, a lowercased copy, a truncated copy
    for v in rnd.sample(values, 400):
        words = v.split()
        pairs.append((" ".join(words[1:]) or v, v))
        pairs.append((v.lower(), v))
        pairs.append((v[: len(v) // 2], v))
    for cand, ref in pairs:
        assert rouge_l_scores(cand, ref) == reference(cand, ref), (cand, ref)


tokens = st.sampled_from(["a", "b", "c", "a.", ".", " ", "  ", "\t", "x.y", "B", "b,", "\n"])


@settings(max_examples=300)
@given(st.lists(tokens, max_size=10).map("".join), st.lists(tokens, max_size=10).map("".join))
def test_matches_the_package_on_random_texts(cand: str, ref: str) -> None:
    assert rouge_l_scores(cand, ref) == reference(cand, ref)
    assert 0.0 <= rouge_l_f(cand, ref) <= 1.0

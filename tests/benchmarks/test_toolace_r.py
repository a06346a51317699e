"""ToolACE-R overlap score (eq. 2–4), model-aware difficulty (eq. 5) and band selection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.benchmarks._toolace_r import (
    align_calls,
    calls_match,
    difficulty,
    in_band,
    overlap_score,
    parameter_jaccard,
    select_by_difficulty,
)


def C(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, arguments=args)


def test_parameter_jaccard_by_hand() -> None:
    assert parameter_jaccard(C("f", a=1, b=2), C("f", a=1, b=3)) == pytest.approx(1 / 3)
    assert parameter_jaccard(C("f", a=1), C("g", a=1)) == 0.0
    assert parameter_jaccard(C("f"), C("f")) == 1.0
    assert parameter_jaccard(C("f", xs=[1, 2]), C("f", xs=[1, 2])) == 1.0
    assert parameter_jaccard(C("f", a=True), C("f", a=1)) == 0.0


def test_hungarian_beats_greedy() -> None:
    gold = [C("f", a=1, b=2), C("f", a=1)]
    pred = [C("f", a=1), C("f", a=1, b=2, c=3, d=4)]
    # S (gold × pred) = [[1/2, 1/2], [1, 1/4]]: greedy in gold order takes (0,0) then (1,1) for
    # 3/4; the optimal matching is (0,1) + (1,0) = 3/2, divided by max(m, m') = 2.
    assert overlap_score(pred, gold) == pytest.approx(0.75)
    assert sorted((i, j) for i, j, _ in align_calls(pred, gold)) == [(0, 1), (1, 0)]


def test_overlap_divides_by_longer_sequence() -> None:
    gold = [C("f", a=1)]
    assert overlap_score([C("f", a=1), C("g")], gold) == 0.5
    assert overlap_score([], gold) == 0.0
    assert overlap_score([], []) == 1.0


def test_difficulty_over_k_attempts() -> None:
    gold = [C("f", a=1, b=2)]
    attempts = [[C("f", a=1, b=2)], [C("f", a=1)], [C("g")], []]
    # overlaps 1, 1/2, 0, 0 → D = 1 − 1.5/4
    assert difficulty(gold, attempts) == pytest.approx(1 - 1.5 / 4)
    assert difficulty(gold, [gold]) == 0.0
    with pytest.raises(ConfigError):
        difficulty(gold, [])


def test_selection_band_is_exclusive() -> None:
    items = ["solved", "medium", "edge", "hopeless"]
    ds = [0.0, 0.5, 0.9, 1.0]
    assert select_by_difficulty(items, ds) == ["medium"]
    assert select_by_difficulty(items, ds, alpha=-1, beta=0.95) == ["solved", "medium", "edge"]
    assert in_band(0.3, 0.1, 0.8) and not in_band(0.1, 0.1, 0.8)
    with pytest.raises(ConfigError):
        select_by_difficulty(items, ds[:2])
    with pytest.raises(ConfigError):
        select_by_difficulty(items, ds, alpha=0.5, beta=0.5)


def test_calls_match_is_order_free_bag_equality() -> None:
    assert calls_match([C("g"), C("f", a=1)], [C("f", a=1.0), C("g")])
    assert not calls_match([C("f"), C("f")], [C("f"), C("g")])


_VALUES = st.one_of(
    st.integers(-3, 3), st.sampled_from(["x", "y", ""]), st.lists(st.integers(0, 2), max_size=2)
)
_CALLS = st.lists(
    st.builds(
        lambda n, a: ToolCall(name=n, arguments=a),
        st.sampled_from(["f", "g", "h"]),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), _VALUES, max_size=3),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(pred=_CALLS, gold=_CALLS, data=st.data())
def test_overlap_properties(pred: list[ToolCall], gold: list[ToolCall], data: st.DataObject) -> None:
    o = overlap_score(pred, gold)
    assert 0.0 <= o <= 1.0
    shuffled_pred = data.draw(st.permutations(pred))
    shuffled_gold = data.draw(st.permutations(gold))
    assert overlap_score(shuffled_pred, shuffled_gold) == pytest.approx(o)
    assert overlap_score(gold, pred) == pytest.approx(o)  # S is symmetric, so is O
    assert overlap_score(gold, gold) == 1.0
    assert 0.0 <= difficulty(gold, [pred, gold]) <= 1.0

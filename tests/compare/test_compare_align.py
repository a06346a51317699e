"""align (Hungarian) and greedy_align (first-best)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from toolmend.compare._align import align, greedy_align


def overlap(p: str, g: str) -> float:
    return len(set(p) & set(g)) / len(set(g)) if g else 0.0


def test_optimal_beats_greedy_where_greedy_is_known_to_fail() -> None:
    # Gold "ab" grabs pred "abc" greedily, leaving gold "c" with nothing; the optimum is 2.
    pred = ["ab", "abc"]
    gold = ["abc", "c"]
    s = lambda p, g: overlap(p, g)  # noqa: E731
    greedy = greedy_align(pred, gold, s)
    best = align(pred, gold, s)
    assert sum(x[2] for x in greedy) < sum(x[2] for x in best)
    assert best == [(0, 0, 2 / 3), (1, 1, 1.0)]
    assert greedy == [(0, None, 0.0), (1, 0, 1.0), (None, 1, 0.0)]


def test_unmatched_items_and_zero_scores() -> None:
    eq = lambda p, g: float(p == g)  # noqa: E731
    assert align(["x", "a"], ["a", "b", "c"], eq) == [
        (0, None, 0.0),
        (1, 0, 1.0),
        (None, 1, 0.0),
        (None, 2, 0.0),
    ]
    assert align([], ["a"], eq) == [(None, 0, 0.0)]
    assert align(["a"], [], eq) == [(0, None, 0.0)]
    assert greedy_align([], [], eq) == []


def test_greedy_takes_the_first_of_equal_candidates() -> None:
    eq = lambda p, g: float(p == g)  # noqa: E731
    assert greedy_align(["a", "a"], ["a"], eq) == [(0, 0, 1.0), (1, None, 0.0)]


@given(
    st.lists(st.text("abc", max_size=3), max_size=5),
    st.lists(st.text("abc", min_size=1, max_size=3), max_size=5),
)
def test_alignment_is_one_to_one_and_optimal(pred: list[str], gold: list[str]) -> None:
    result = align(pred, gold, overlap)
    ps = [p for p, _, _ in result if p is not None]
    gs = [g for _, g, _ in result if g is not None]
    assert sorted(ps) == list(range(len(pred)))
    assert sorted(gs) == list(range(len(gold)))
    total = sum(s for _, _, s in result)
    assert total >= sum(s for _, _, s in greedy_align(pred, gold, overlap)) - 1e-9
    if len(pred) <= 4 and len(gold) <= 4:
        # brute force over injective maps of the shorter side
        k = min(len(pred), len(gold))
        brute = max(
            (
                sum(overlap(pred[i], gold[j]) for i, j in zip(pi, gj, strict=True))
                for pi in itertools.permutations(range(len(pred)), k)
                for gj in itertools.combinations(range(len(gold)), k)
            ),
            default=0.0,
        )
        assert abs(total - brute) < 1e-9


@given(
    st.lists(st.text("abc", max_size=3), max_size=5),
    st.lists(st.text("abc", min_size=1, max_size=3), max_size=5),
    st.randoms(),
)
def test_total_does_not_depend_on_prediction_order(pred: list[str], gold: list[str], rnd: object) -> None:
    shuffled = list(pred)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a = sum(s for _, _, s in align(pred, gold, overlap))
    b = sum(s for _, _, s in align(shuffled, gold, overlap))
    assert abs(a - b) < 1e-9

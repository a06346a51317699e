"""NesTools compat scoring where the official value scorer fails part-way: the differences found
by checking ``compat`` against the official evaluation code (docs/benchmarks/nestools.md).

Both failures are swallowed by the official evaluator and become a 0 for the *whole* parameter
value, so compat must give 0 there; improved mode scores the value on its merits.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolmend.benchmarks.nestools._metric import count_compat, count_improved
from toolmend.benchmarks.nestools._values import check_score, safe_check_score

GOLD: list[dict[str, Any]] = [
    {
        "api_name": "plan",
        "api_id": 7,
        "parameters": {"note": "window seat", "trip": {"city": "Paris", "days": 3}},
        "responses": ["API_call_0"],
    },
    {"api_name": "share", "api_id": 8, "parameters": {"plan": "API_call_0"}, "responses": []},
]
NAMES = {"plan": 7, "share": 8}


def answer(trip: Any, note: str = "window seat") -> str:
    # a Python-literal answer, the only kind that can carry a non-string dict key
    return repr(
        [
            {
                "api_name": "plan",
                "api_id": 7,
                "parameters": {"note": note, "trip": trip},
                "responses": {"itinerary": "API_call_0"},
            },
            {"api_name": "share", "api_id": 8, "parameters": {"plan": "API_call_0"}, "responses": {}},
        ]
    )


def test_a_non_string_dict_key_zeroes_the_whole_value_in_compat() -> None:
    # Same key count; position 0 matches ("city"), position 1 has the integer key 2, which the
    # official key comparison cannot lowercase: the whole dict scores 0, not 1/2.
    trip = {"city": "Paris", 2: 3}
    assert safe_check_score({"city": "Paris", "days": 3}, trip) == 0.0
    with pytest.raises(ValueError):
        check_score({"city": "Paris", "days": 3}, trip)
    # improved compares str(2) == "2" with "days": no match, so city alone earns 1/2
    assert safe_check_score({"city": "Paris", "days": 3}, trip, isolate=True) == 0.5

    compat = count_compat(GOLD, "plan a trip", answer(trip))
    assert compat["format"] == 1
    assert compat["param_correct"] == 2.0  # note 1 + trip 0 + nested plan 1
    assert compat["para_error_transformation"] == 1  # "{'city': 'paris', 'days': 3}" is not in the task
    improved = count_improved(GOLD, "plan a trip", answer(trip), NAMES)
    assert improved["param_correct"] == 2.5


def test_non_string_keys_inside_a_list_zero_the_outer_list() -> None:
    gold = [{"a": "x"}, "y"]
    assert safe_check_score(gold, [{1: "x"}, "y"]) == 0.0  # "y" would have scored 1
    assert safe_check_score(gold, [{"a": "x"}, "y"]) == 1.0
    assert safe_check_score(gold, [{1: "x"}, "y"], isolate=True) == 0.5


def test_all_string_keys_still_score_by_position() -> None:
    # the key rule itself is unchanged: position-wise, case-folded, "_" and spaces dropped
    assert safe_check_score({"city": "Paris", "days": 3}, {"CITY": "Paris", "nights": 3}) == 0.5
    assert safe_check_score({"city": "Paris", "days": 3}, {"City": "Paris", "Da_y s": 3}) == 1.0
    # equal dicts score 1 whatever their order; unequal ones are compared position by position
    assert safe_check_score({"city": "Paris", "days": 3}, {"days": 3, "city": "Paris"}) == 1.0
    assert safe_check_score({"city": "Paris", "days": 3}, {"days": 3, "city": "Lyon"}) == 0.0


def _tail(words: int) -> str:
    return "x" + " y" * words


def test_the_official_rouge_recursion_limit_top_level() -> None:
    # Gold "x" against "x y y ... y" (k times "y"): rouge's LCS rebuild steps left over the k
    # "y"s, then once diagonally, ending in a last call: k + 2 nested frames. The official run
    # has 11 frames under the first one and Python allows 1000, so k + 2 <= 989 is fine.
    ok, dead = _tail(987), _tail(988)
    # what the package gives when it survives: P = 1/2 (distinct hyp tokens x, y), R = 1
    expected = 2 * (0.5 * 1.0) / (1.5 + 1e-8)
    assert safe_check_score("x", ok) == pytest.approx(expected, abs=1e-12)
    assert safe_check_score("x", dead) == 0.0
    with pytest.raises(ValueError):
        check_score("x", dead)
    # improved mode scores the text itself
    assert safe_check_score("x", dead, isolate=True) == pytest.approx(expected, abs=1e-12)


def test_the_recursion_limit_one_frame_earlier_inside_a_list() -> None:
    # one more check_score frame for the list: k + 2 <= 988
    assert safe_check_score(["x", "z"], [_tail(986), "z"]) == pytest.approx((2 / 3 + 1) / 2, abs=1e-8)
    assert safe_check_score(["x", "z"], [_tail(987), "z"]) == 0.0
    assert safe_check_score(["x", "z"], [_tail(987), "z"], isolate=True) == pytest.approx(
        (2 / 3 + 1) / 2, abs=1e-8
    )


def test_long_texts_that_rebuild_quickly_still_score() -> None:
    # the limit is about the rebuild's walk, not the length: here it ends after one step per
    # gold word, because the matching words sit at the end of the long text
    long_head = "w " * 1200 + "x"
    assert safe_check_score("x", long_head) > 0
    # a period cuts sentences, and each sentence pair is rebuilt on its own
    assert safe_check_score("x", "x" + " y" * 600 + ". y" + " y" * 600) > 0


def test_a_recursion_deep_value_in_a_full_answer() -> None:
    long_note = "window seat" + " please" * 1000
    compat = count_compat(GOLD, "plan a trip", answer({"city": "Paris", "days": 3}, note=long_note))
    improved = count_improved(
        GOLD, "plan a trip", answer({"city": "Paris", "days": 3}, note=long_note), NAMES
    )
    assert compat["param_correct"] == 2.0  # note 0, trip 1, plan 1
    assert improved["param_correct"] > 2.5

"""values_equal / normalize_bfcl_string: the three modes and their edges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolmend._schema import Ref
from toolmend.compare._values import canonical_json, normalize_bfcl_string, values_equal


def test_bfcl_normalisation_strips_exactly_the_bfcl_characters() -> None:
    assert normalize_bfcl_string("April 1, 2024") == "april12024"
    assert normalize_bfcl_string("a-b_c*d^e/f.g") == "abcdefg"
    assert normalize_bfcl_string("It's") == 'it"s'
    # Characters BFCL keeps stay: colon, parentheses, plus.
    assert normalize_bfcl_string("10:30 (+1)") == "10:30(+1)"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (3, 3.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ("70", 70, False),
        ("Paris", "paris", False),
        ([1, "a"], [1.0, "a"], True),
        ([1, 2], [2, 1], False),
        ((1, 2), [1, 2], True),
        ({"a": 1, "b": [1]}, {"b": [1.0], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (None, None, True),
        (None, "", False),
        (Ref(target="API_call_0"), Ref(target="API_call_0"), True),
        (Ref(target="API_call_0"), "API_call_0", False),
        (0.1 + 0.2, 0.3, False),
    ],
)
def test_exact(a: object, b: object, expected: bool) -> None:
    assert values_equal(a, b) is expected
    assert values_equal(b, a) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("New York", "newyork", True),
        ("April 1, 2024", "april 1 2024", True),
        ("NYC", "New York", False),
        (["New York", "LA"], ["new-york", "la"], True),
        (["a", "b"], ["b", "a"], False),
        ({"city": "San Francisco"}, {"city": "san_francisco"}, True),
        ({"city": "SF"}, {"town": "SF"}, False),
        (0.1 + 0.2, 0.3, False),
        (5, 5.0, True),
        (True, 1, False),
    ],
)
def test_bfcl(a: object, b: object, expected: bool) -> None:
    assert values_equal(a, b, mode="bfcl") is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Los Angeles", "Los Angles", True),
        ("  Paris ", "paris", True),
        ("Paris", "London", False),
        (100, 100.00001, True),
        (100, 101, False),
        ("70", 70, True),
        ("seventy", 70, False),
        ([1, "Berlin"], [1.0000001, "berlin"], True),
        (True, 1, False),
    ],
)
def test_fuzzy(a: object, b: object, expected: bool) -> None:
    assert values_equal(a, b, mode="fuzzy") is expected


def test_fuzzy_threshold_is_respected() -> None:
    assert values_equal("abcd", "abce", mode="fuzzy", threshold=0.7)
    assert not values_equal("abcd", "abce", mode="fuzzy", threshold=0.8)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)


@given(json_values)
def test_every_mode_is_reflexive(v: object) -> None:
    for mode in ("exact", "bfcl", "fuzzy"):
        assert values_equal(v, v, mode=mode)  # type: ignore[arg-type]


@given(json_values, json_values)
def test_exact_implies_the_looser_modes(a: object, b: object) -> None:
    if values_equal(a, b):
        assert values_equal(a, b, mode="bfcl")
        assert values_equal(a, b, mode="fuzzy")


def test_canonical_json_orders_keys_and_keeps_bools_apart() -> None:
    assert canonical_json({"b": 1.0, "a": [True, (2.5, None)]}) == '{"a": [true, [2.5, null]], "b": 1}'
    assert canonical_json({"x": 1}) == canonical_json({"x": 1.0})
    assert canonical_json([1]) != canonical_json([True])
    assert canonical_json(float("nan")) == "NaN"  # not integral, kept as a float

"""The building blocks: wrong names, key aliases and wrong values."""

from __future__ import annotations

import random
import re

from hypothesis import given
from hypothesis import strategies as st

from toolmend._schema import Tool
from toolmend.check._coerce import matches_type
from toolmend.synth.inject._names import hallucinations, irrelevant_keys, key_aliases
from toolmend.synth.inject._values import break_format, mistype, sample_value

DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}


def test_hallucinations_keep_the_naming_style() -> None:
    names = dict(hallucinations("getUserInfo", []))
    assert names["fetchUserInfo"] == "synonym"
    dotted = [n for n, _ in hallucinations("math.factorial", ["math.factorial_v2"])]
    assert dotted and all(n.startswith("math.") for n in dotted) and "math.factorial_v2" not in dotted


def test_aliases_and_irrelevant_keys_are_undeclared() -> None:
    assert key_aliases("city", {"city": {}, "location": {}})[0] == "city_name"
    assert "endDate" in key_aliases("end_date", {})
    tool = Tool(name="a", parameters={"type": "object", "properties": {"x": {}}})
    other = Tool(name="b", parameters={"type": "object", "properties": {"x": {}, "y": {}}})
    assert irrelevant_keys(tool, [tool, other])[0] == "y"


def test_broken_dates_keep_the_date() -> None:
    value, what = break_format("2025-07-25", DATE, random.Random(0)) or (None, None)
    assert what == "pattern" and "25" in str(value) and not re.search(DATE["pattern"], str(value))
    assert break_format(5, {"type": "integer", "minimum": 1, "maximum": 10}, random.Random(0)) == (0, "range")
    assert break_format("x", {"type": "string"}, random.Random(0)) is None


@given(st.one_of(st.integers(), st.floats(allow_nan=False), st.text(), st.booleans(),
                 st.lists(st.integers(), max_size=3)))  # fmt: skip
def test_mistyped_values_never_fit_the_declared_type(value: object) -> None:
    for json_type in ("string", "integer", "number", "boolean", "array"):
        if not matches_type(value, json_type):
            continue
        wrong = mistype(value, {"type": json_type}, random.Random(1))
        assert wrong is None or not matches_type(wrong, json_type)


def test_sample_value_fits_enum_bounds_and_patterns() -> None:
    rng = random.Random(0)
    assert sample_value({"type": "string", "enum": ["a", "b"]}, rng) in ("a", "b")
    n = sample_value({"type": "integer", "minimum": 15, "maximum": 480}, rng)
    assert isinstance(n, int) and 15 <= n <= 480
    assert re.search(DATE["pattern"], sample_value(DATE, rng))
    assert sample_value({"type": "string", "default": ""}, rng) != ""

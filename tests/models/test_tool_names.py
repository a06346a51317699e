"""Reversible API-safe tool names."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from toolmend.models import ToolNameMap

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_valid_names_keep_themselves_and_clashes_get_suffixes() -> None:
    names = ToolNameMap(["a.b", "a_b", "a-b", "a b", "x" * 80])
    assert names.to_wire("a_b") == "a_b" and names.to_wire("a-b") == "a-b"
    assert names.to_wire("a.b") == "a_b_2" and names.to_wire("a b") == "a_b_3"
    long = names.to_wire("x" * 80)
    assert SAFE.match(long) and len(long) == 64
    assert names.table() == {"a.b": "a_b_2", "a b": "a_b_3", "x" * 80: long}
    assert names.to_original("hallucinated_tool") == "hallucinated_tool"
    assert ToolNameMap(["ok"]).identity and not names.identity


@given(st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=12))
def test_round_trip_for_any_names(raw: list[str]) -> None:
    names = ToolNameMap(raw)
    wires = [names.to_wire(n) for n in dict.fromkeys(raw)]
    assert all(SAFE.match(w) for w in wires)
    assert len(set(wires)) == len(wires)
    assert [names.to_original(w) for w in wires] == list(dict.fromkeys(raw))

"""Hypothesis strategies for tool calls (imported by the round-trip and fuzz tests)."""

from __future__ import annotations

import keyword
from typing import Any

from hypothesis import strategies as st

from toolmend._schema import Ref, ToolCall
from toolmend.formats._nestools import PLACEHOLDER

IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s)
)
NAMES = st.lists(IDENT, min_size=1, max_size=3).map(".".join)


def _no_placeholder(s: str) -> bool:
    return PLACEHOLDER.fullmatch(s) is None


def json_values(
    text: st.SearchStrategy[str], refs: st.SearchStrategy[Any] | None = None
) -> st.SearchStrategy[Any]:
    """Plain JSON data (finite floats; no ``{"$ref": ...}`` dicts unless ``refs`` adds Refs)."""
    leaves: st.SearchStrategy[Any] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
    )
    if refs is not None:
        leaves = st.one_of(leaves, refs)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(text, inner, max_size=3).filter(lambda d: "$ref" not in d),
        ),
        max_leaves=8,
    )


def calls(
    *,
    text: st.SearchStrategy[str] | None = None,
    keys: st.SearchStrategy[str] = IDENT,
    refs: st.SearchStrategy[Any] | None = None,
    with_ids: bool = False,
    outputs: bool = False,
) -> st.SearchStrategy[list[ToolCall]]:
    text = text if text is not None else st.text(max_size=12)

    @st.composite
    def one(draw: st.DrawFn) -> ToolCall:
        args = draw(st.dictionaries(keys, json_values(text, refs), max_size=4))
        call_id = draw(st.one_of(st.none(), IDENT)) if with_ids else None
        outs: list[str] = []
        fields: list[str] = []
        if outputs:
            n = draw(st.integers(min_value=0, max_value=3))
            outs = [f"API_call_{draw(st.integers(min_value=0, max_value=30))}" for _ in range(n)]
            fields = draw(st.lists(IDENT, min_size=n, max_size=n, unique=True)) if draw(st.booleans()) else []
        return ToolCall(name=draw(NAMES), arguments=args, id=call_id, outputs=outs, output_fields=fields)

    return st.lists(one(), min_size=1, max_size=3)


NESTOOLS_TEXT = st.text(max_size=12).filter(_no_placeholder)
PLACEHOLDER_REFS = st.integers(min_value=0, max_value=30).map(lambda i: Ref(target=f"API_call_{i}"))
ANY_REFS = st.text(min_size=1, max_size=8).map(lambda t: Ref(target=t))
TAG_SAFE_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=12
)

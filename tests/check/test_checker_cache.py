"""``Checker.cached``: one compiled checker per tool content, bounded in bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolmend import Checker, Tool


def _spec(name: str, pad: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "description": "x" * pad,
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    }


def _size(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, sort_keys=True, ensure_ascii=False).encode())


def test_same_content_gives_the_same_object_whatever_the_key_order_or_form() -> None:
    spec = _spec("cache_same")
    first = Checker.cached([spec])
    assert Checker.cached([json.loads(json.dumps(spec))]) is first
    assert Checker.cached([dict(reversed(list(spec.items())))]) is first
    tool = Tool(name="cache_tool", parameters=spec["parameters"])
    assert Checker.cached([tool]) is Checker.cached(
        [Tool(name="cache_tool", parameters=dict(spec["parameters"]))]
    )
    assert first.check_arguments("cache_same", {"a": "1"})[0].code == "invalid_type"


def test_different_content_gives_a_different_checker() -> None:
    base = Checker.cached([_spec("cache_diff")])
    assert Checker.cached([_spec("cache_diff", pad=1)]) is not base
    assert Checker.cached([_spec("cache_diff"), _spec("cache_other")]) is not base
    assert Checker.cached([_spec("cache_diff")], view=lambda t: t) is not base  # the view is part of the key
    same, other = (lambda t: t), (lambda t: {**t, "description": "seen"})  # noqa: E731
    assert Checker.cached([_spec("cache_diff")], view=same) is Checker.cached(
        [_spec("cache_diff")], view=same
    )
    viewed = Checker.cached([_spec("cache_diff")], view=other)
    assert viewed is not Checker.cached([_spec("cache_diff")], view=same)
    assert viewed.tools["cache_diff"].description == "seen"


def test_the_bound_is_in_bytes_of_content(monkeypatch: pytest.MonkeyPatch) -> None:
    small = [[_spec(f"cache_small_{i}")] for i in range(4)]
    big = [_spec("cache_big", pad=5000)]
    budget = _size(big) + sum(_size(s) for s in small[:2]) + 10
    monkeypatch.setattr(Checker, "CACHE_BYTES", budget)
    kept = [Checker.cached(s) for s in small]  # four small lists fit
    assert all(Checker.cached(s) is k for s, k in zip(small, kept, strict=True))
    big_checker = Checker.cached(big)  # one large list pushes out the two least recently used
    assert Checker.cached(big) is big_checker
    assert Checker.cached(small[2]) is kept[2] and Checker.cached(small[3]) is kept[3]
    assert Checker.cached(small[0]) is not kept[0]
    # A list larger than the whole budget is compiled, used, and not kept.
    huge = [_spec("cache_huge", pad=budget)]
    assert Checker.cached(huge) is not Checker.cached(huge)
    assert Checker.cached(huge).check_arguments("cache_huge", {"a": 1}) == []


def test_a_refused_list_is_not_kept() -> None:
    calls: list[int] = []

    def check(tools: Any) -> None:
        calls.append(len(tools))
        if len(tools) > 1:
            raise ValueError("too many")

    one = [_spec("cache_check")]
    assert Checker.cached(one, check=check) is Checker.cached(one, check=check)
    assert calls == [1]  # checked once, on first sight
    two = [*one, _spec("cache_check_2")]
    for _ in range(2):
        with pytest.raises(ValueError, match="too many"):
            Checker.cached(two, check=check)
    assert calls == [1, 2, 2]

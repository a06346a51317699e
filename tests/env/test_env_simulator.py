"""Schema-shaped synthetic responses and the cache file."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from toolmend.env import ToolCache, call_key, synthesize
from toolmend.errors import DatasetError
from toolmend.world import World


def test_synthesized_values_validate_for_every_world_return_schema() -> None:
    for tool in World.create(0).tools:
        assert tool.returns is not None
        for seed in range(3):
            value = synthesize(tool.returns, seed=f"{tool.name}:{seed}")
            Draft202012Validator(tool.returns).validate(value)


def test_synthesize_is_deterministic_and_varies_with_seed() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}
    assert synthesize(schema, seed="a") == synthesize(schema, seed="a")
    assert any(synthesize(schema, seed="a") != synthesize(schema, seed=s) for s in "bcdef")
    assert isinstance(synthesize(None, seed=1), dict)


def test_cache_key_is_order_insensitive_and_scoped() -> None:
    assert call_key("t", {"a": 1, "b": [1, 2]}) == call_key("t", {"b": [1, 2], "a": 1})
    assert call_key("t", {"a": 1}) != call_key("u", {"a": 1})
    assert call_key("t", {"a": 1}, "v1") != call_key("t", {"a": 1}, "v2")


def test_broken_cache_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_text('{"k": 1,\n oops}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"cache\.json, line 2"):
        ToolCache(path)

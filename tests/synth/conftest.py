"""Gold call lists for the injection tests: the built-in world's tasks and BFCL's answers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from toolmend._schema import ToolCall
from toolmend.benchmarks.bfcl._data import load_bfcl
from toolmend.check import Checker
from toolmend.world import World, generate_tasks


@dataclass
class Gold:
    id: str
    calls: list[ToolCall]
    checker: Checker


@pytest.fixture(scope="session")
def world_gold() -> list[Gold]:
    checker = Checker(World.create(0).tools)
    return [Gold(t.id, t.calls, checker) for t in generate_tasks(seed=0)]


@pytest.fixture(scope="session")
def bfcl_gold(data_dir: Path) -> list[Gold]:
    out = []
    for sample in load_bfcl(data_dir / "bfcl"):
        if not sample.target:
            continue
        checker = Checker(sample.tools)
        # Four answers do not pass their own schema (see toolmend.benchmarks.bfcl._data and
        # tests/check); an injection into an already-wrong call proves nothing.
        if checker.check(sample.target, expected_count=len(sample.target)):
            continue
        out.append(Gold(sample.id, sample.target, checker))
    return out

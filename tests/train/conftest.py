"""Fixtures for the recipe tests: the tiny model of ``tests/helpers/tiny_llm.py``, built once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("trl", reason="the train extra is not installed (pip install 'toolmend[train]')")


def _helper(name: str) -> ModuleType:
    # As tests/conftest.py's load_helper: registered by name so test files can import it.
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).parents[1] / "helpers" / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


tiny_llm = _helper("tiny_llm")


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return tiny_llm.corpus_texts()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, corpus: list[str]) -> Path:
    return tiny_llm.save_tiny(tmp_path_factory.mktemp("tiny"), corpus=corpus)

"""Fixtures for the recipe tests: the tiny model of ``tests/helpers/tiny_llm.py``, built once."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiny_llm

pytest.importorskip("trl", reason="the train extra is not installed (pip install 'toolmend[train]')")


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return tiny_llm.corpus_texts()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, corpus: list[str]) -> Path:
    return tiny_llm.save_tiny(tmp_path_factory.mktemp("tiny"), corpus=corpus)

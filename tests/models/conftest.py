"""The model tests never touch ~/.cache or a real key (fixtures in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(private_cache_dir: Path) -> Path:
    return private_cache_dir

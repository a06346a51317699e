"""Shared fixtures: where the real benchmark data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmend._shared import shared_dir

SHARED = shared_dir()
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``../shared/data`` (or ``$TOOLMEND_SHARED/data``); the tests need it and fail loudly without it."""
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}; set TOOLMEND_SHARED to the shared folder")
    return DATA

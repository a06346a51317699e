"""Fixtures for the model tests: a real OpenAI-compatible server on loopback, and a private cache."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HELPERS = Path(__file__).resolve().parents[1] / "helpers"


def _load(name: str) -> Any:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _HELPERS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fake_openai_server = _load("fake_openai_server")


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch ~/.cache from a test; no real keys either."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(cache))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return cache


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """A started :class:`FakeOpenAIServer` (echo handler) on a random loopback port."""
    server = fake_openai_server.FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


resume_worker = _load("resume_worker")

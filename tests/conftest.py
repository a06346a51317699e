"""Shared fixtures: where the real benchmark data lives, a fake OpenAI-compatible server and a
private cache folder. The modules of ``tests/helpers`` and ``tests/serve`` import by name
(``from fake_openai_server import Reply``): pyproject.toml puts them on pytest's ``pythonpath``."""

from __future__ import annotations

import os

# xdist runs one worker per core already. Left at their default of a thread per core, torch's and
# the BLAS libraries' pools would oversubscribe the cores (two workers, two threads each, on two
# cores), and every parallel op would wait for a thread that another worker keeps off its core.
# Set before anything loads those libraries, which read these once; subprocesses inherit them.
if (_workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))) > 1:
    _threads = str(max(1, len(os.sched_getaffinity(0)) // _workers))
    for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_openai_server
import pytest
from hypothesis import settings

from toolmend._shared import shared_dir

# Under CI the property tests replay a fixed set of examples, so a run's verdict does not depend
# on which random inputs it drew; locally they keep exploring (and keep what they find in
# .hypothesis/).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

SHARED = shared_dir()
DATA = SHARED / "data"


def pytest_configure(config: pytest.Config) -> None:
    # xdist's loadfile hands out files largest (most tests) first. A few files hold few but long
    # tests (a real model, the docs pages, mypy): handed out last, one of them keeps a worker busy
    # while the others have nothing left. The order below is used instead.
    if getattr(config.option, "loadscopereorder", False):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist: files marked ``slow`` first, then the rest by test count (largest first), each
    file's tests in their own order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ranked = sorted(
        files.values(), key=lambda tests: (tests[0].get_closest_marker("slow") is None, -len(tests))
    )
    items[:] = [item for tests in ranked for item in tests]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``../shared/data`` (or ``$TOOLMEND_SHARED/data``); the tests need it and fail loudly without it."""
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}; set TOOLMEND_SHARED to the shared folder")
    return DATA


@pytest.fixture
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``TOOLMEND_CACHE_DIR`` under ``tmp_path`` and no real OpenAI key or base URL, so a
    test never touches ``~/.cache`` or the network. Folders that need it for every test wrap it
    in an autouse fixture."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(cache))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return cache


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """A started ``FakeOpenAIServer`` (echo handler) on a random loopback port."""
    server = fake_openai_server.FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()

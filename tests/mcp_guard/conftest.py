"""Fixtures of the MCP guard's tests."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from toolmend.serve import _budget


@pytest.fixture
def steps_end() -> Iterator[None]:
    """After the test, wait until every budget step it interrupted has ended: an interruption that
    lands in a garbage collector's callback is reported as "ignored", and it must be reported
    inside the test that caused it (which expects it), not in whichever test runs next."""
    yield
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        idle = {worker.thread for worker in list(_budget._IDLE)}
        busy = [t for t in threading.enumerate() if t.name == "toolmend-budget" and t not in idle]
        if not busy:
            break
        busy[0].join(0.05)
    gc.collect()

"""ruff and mypy are part of the test suite, so CI enforces them with the same command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kept_dirs import kept_dir

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    exe = BIN / name
    found = str(exe) if exe.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; run scripts/install.sh")
    return found


def test_ruff_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The incremental cache outlives the checkout (a fresh clone's .mypy_cache is empty, and a
    # cold run takes minutes here): mypy checks every cached entry against its source's hash.
    cache = kept_dir(tmp_path_factory, "toolmend-mypy-cache")
    proc = subprocess.run(
        [_tool("mypy"), "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

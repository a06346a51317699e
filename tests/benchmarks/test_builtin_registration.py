"""Every built-in benchmark registers when only its own module is loaded (fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolmend.benchmarks import _BUILTIN as BUILTIN
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_loading_one_name_registers_it(name: str) -> None:
    code = (
        "from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks\n"
        f"load_builtin_benchmarks({name!r})\n"
        f"assert {name!r} in BENCHMARKS, BENCHMARKS.names()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_loading_all_registers_every_name() -> None:
    load_builtin_benchmarks()
    assert set(BUILTIN) <= set(BENCHMARKS.names())

"""Benchmarks, one module each, registered by name in :data:`BENCHMARKS`.

>>> from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
>>> load_builtin_benchmarks()
>>> "nestools" in BENCHMARKS
True
"""

from __future__ import annotations

import importlib

from toolmend.benchmarks.base import BENCHMARKS, Benchmark, Mode, Prediction, SampleScore, as_mode
from toolmend.benchmarks.predictions import Predictions, read_predictions
from toolmend.benchmarks.scoring import ScoreReport, score_predictions

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "Mode",
    "Prediction",
    "Predictions",
    "SampleScore",
    "ScoreReport",
    "as_mode",
    "load_builtin_benchmarks",
    "read_predictions",
    "score_predictions",
]

# Registered name -> the module that registers it.
_BUILTIN = {
    "nestools": "nestools",
    "bfcl": "bfcl",
    "critictool": "critictool",
    "reflection-bench": "reflection_bench",
    "seal-tools": "sealtools",
    "api-bank": "apibank",
    "toolalpaca": "toolalpaca",
    "world": "world",
}


def load_builtin_benchmarks(name: str | None = None) -> None:
    """Import the built-in benchmark modules so that they register themselves; with ``name``, only
    the module that defines it (importing every one pulls in scipy and more that one benchmark may
    not need). Cheap after the first call."""
    modules = [_BUILTIN[name]] if name in _BUILTIN else _BUILTIN.values()
    for module in modules:
        importlib.import_module(f"toolmend.benchmarks.{module}")

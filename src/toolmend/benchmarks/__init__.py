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

_BUILTIN = (
    "nestools",
    "bfcl",
    "critictool",
    "reflection_bench",
    "sealtools",
    "apibank",
    "toolalpaca",
)


def load_builtin_benchmarks() -> None:
    """Import the built-in benchmark modules so that they register themselves (cheap after the first call)."""
    for name in _BUILTIN:
        importlib.import_module(f"toolmend.benchmarks.{name}")

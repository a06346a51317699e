"""BFCL (Berkeley Function Calling Leaderboard) single-turn scoring, BFCL-compatible and improved.

- :mod:`~toolmend.benchmarks.bfcl._data` — question + possible-answer files → samples;
- :mod:`~toolmend.benchmarks.bfcl._decode` — raw replies (Python call lists, FC-mode JSON) → calls;
- :mod:`~toolmend.benchmarks.bfcl._checker` — BFCL's AST checker with its ``error_type`` labels;
- :mod:`~toolmend.benchmarks.bfcl._benchmark` — the :class:`BFCLBenchmark` registered as ``"bfcl"``.

>>> from toolmend.benchmarks import BENCHMARKS
>>> import toolmend.benchmarks.bfcl
>>> "bfcl" in BENCHMARKS
True
"""

from toolmend.benchmarks.bfcl._benchmark import BFCLBenchmark
from toolmend.benchmarks.bfcl._data import load_bfcl

__all__ = [
    "BFCLBenchmark",
    "load_bfcl",
]

"""Benchmarks, one package or module each, found by name in :data:`BENCHMARKS`.

Every built-in name is registered lazily: its module is imported on first use, so naming one
benchmark does not import the others (and the scipy, embedding models and worlds they pull in).
Third-party benchmarks register in the entry-point group ``toolmend.benchmarks``; suites (data
built on demand, like ``critic``) in :data:`SUITES`; inference-time strategies in
:data:`STRATEGIES` (group ``toolmend.strategies``).

>>> from toolmend.benchmarks import BENCHMARKS
>>> "nestools" in BENCHMARKS, BENCHMARKS.get("bfcl").reply_format
(True, 'python')
"""

from __future__ import annotations

from toolmend import strategies as _strategies  # noqa: F401 - registers the built-in strategies
from toolmend._errors import ToolmendError
from toolmend.benchmarks._base import (
    BENCHMARKS,
    STRATEGIES,
    SUITES,
    Benchmark,
    Generate,
    Mode,
    Prediction,
    SampleScore,
    SolveState,
    Strategy,
    Suite,
    as_mode,
    make_benchmark,
    reply_text,
)
from toolmend.benchmarks._predictions import Predictions, read_predictions
from toolmend.benchmarks._scoring import ScoreReport, score_predictions
from toolmend.models._providers import MODELS

__all__ = [
    "BENCHMARKS",
    "STRATEGIES",
    "SUITES",
    "Benchmark",
    "Generate",
    "Mode",
    "Prediction",
    "Predictions",
    "SampleScore",
    "ScoreReport",
    "SolveState",
    "Strategy",
    "Suite",
    "as_mode",
    "benchmark_class",
    "load_builtin_benchmarks",
    "make_benchmark",
    "read_predictions",
    "reply_text",
    "score_predictions",
]

for _name, _target in {
    "nestools": "toolmend.benchmarks.nestools._benchmark:NesTools",
    "bfcl": "toolmend.benchmarks.bfcl._benchmark:BFCLBenchmark",
    "critictool": "toolmend.benchmarks.critictool._benchmark:CriticToolBenchmark",
    "reflection-bench": "toolmend.benchmarks.reflection_bench._benchmark:ReflectionBench",
    "seal-tools": "toolmend.benchmarks._sealtools:SealTools",
    "api-bank": "toolmend.benchmarks._apibank:ApiBank",
    "toolalpaca": "toolmend.benchmarks._toolalpaca:ToolAlpaca",
    "world": "toolmend.benchmarks.world._benchmark:WorldBenchmark",
}.items():
    BENCHMARKS.add_lazy(_name, _target)
SUITES.add_lazy("critic", "toolmend.benchmarks.critic._suite:CRITIC_SUITE")
SUITES.add_lazy("world", "toolmend.benchmarks.world._benchmark:WORLD_SUITE")
# The rule-based CriticTool critic, run as a model (``get_model("checklist")``).
MODELS.add_lazy("checklist", "toolmend.benchmarks.critictool._checklist:checklist_backend")


def benchmark_class(name: str) -> type[Benchmark] | None:
    """The registered benchmark class behind ``name`` (a suite's benchmark for a suite name), or
    ``None`` when nothing by that name can be loaded.

    >>> benchmark_class("critic").percent_scale, benchmark_class("bfcl").percent_scale
    (True, False)
    """
    try:
        if name in SUITES:
            name = SUITES.get(name).benchmark
        return BENCHMARKS.get(name) if name in BENCHMARKS else None
    except ToolmendError:
        return None


def load_builtin_benchmarks(name: str | None = None) -> None:
    """Import the benchmark ``name`` (every registered one without it), e.g. to list their classes.

    Not needed to use a benchmark: :data:`BENCHMARKS` imports one on first use."""
    if name is None:
        BENCHMARKS.load_all()
    elif name in BENCHMARKS:
        BENCHMARKS.get(name)

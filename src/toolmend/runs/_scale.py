"""One scale and one precision for every number a user reads: percentages 0–100 with one decimal
place, unless the metric is a count.

The terminal table, the progress bar, ``report.md`` and ``report.html`` all format through
:func:`format_metric`, so the same run never reads as ``0.8671`` in one place and ``86.71`` in
another. Per-sample scores are fractions in [0, 1]; a benchmark's aggregate is a fraction too,
except where its official scorer publishes percentages (CriticTool), which are kept as they are.

>>> format_metric("accuracy", 0.8671), format_metric("detect", 86.71, percent=True)
('86.7', '86.7')
>>> format_metric("n_samples", 500.0), format_metric("accuracy", None)
('500', '–')

A benchmark's own counts are the metrics it declares in ``count_keys``; pass its name:

>>> format_metric("fault/timeout/injected", 6.0, benchmark="world")
'6'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import lru_cache

from toolmend.benchmarks import benchmark_class

__all__ = ["format_metric", "format_pct", "is_count", "percent_keys", "to_pct"]

_COUNT_WORDS = ("tokens", "requests", "retries", "cache_hits", "samples", "count", "latency", "turns")


def is_count(name: str, benchmark: str | None = None) -> bool:
    """A metric that counts things (``n_samples``, ``input_tokens`` …, and what ``benchmark``
    declares in ``count_keys``), shown as a plain number.

    >>> is_count("n_scored"), is_count("output_tokens"), is_count("tree_pass")
    (True, True, False)
    >>> is_count("invalid/missing_required/calls"), is_count("invalid/missing_required/calls", "world")
    (False, True)
    """
    base = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if base.startswith("n_") or any(w in base for w in _COUNT_WORDS):
        return True
    return any(fnmatchcase(name, pattern) for pattern in _declared_counts(benchmark))


@lru_cache(maxsize=64)
def _declared_counts(benchmark: str | None) -> tuple[str, ...]:
    declared = benchmark_class(benchmark) if benchmark else None
    return declared.count_keys if declared is not None else ()


def percent_keys(benchmark: str, metrics: Mapping[str, float | None]) -> set[str]:
    """The metrics of a ``benchmark`` run that are already percentages: every rate when the
    benchmark declares that it aggregates in percent (``percent_scale``), and any rate above 1 (a
    fraction never is).

    >>> sorted(percent_keys("bfcl", {"accuracy": 0.5, "overall_pct": 50.0, "n_samples": 4}))
    ['overall_pct']
    >>> sorted(percent_keys("critic", {"detect": 0.5, "n_samples": 4}))
    ['detect']
    """
    declared = benchmark_class(benchmark)
    every = declared is not None and declared.percent_scale
    return {
        k
        for k, v in metrics.items()
        if not is_count(k, benchmark) and (every or (v is not None and not math.isnan(v) and v > 1.0))
    }


def to_pct(value: float | None, *, percent: bool = False) -> float | None:
    """``value`` on the 0–100 scale (``percent=True``: it already is); ``None``/NaN stay ``None``."""
    if value is None or math.isnan(value):
        return None
    return float(value) if percent else 100.0 * float(value)


def format_pct(value: float | None) -> str:
    """A value already on the 0–100 scale, one decimal place; an en dash when missing.

    >>> format_pct(86.66), format_pct(None)
    ('86.7', '–')
    """
    return "–" if value is None or math.isnan(value) else f"{value:.1f}"


def format_metric(
    name: str, value: float | None, *, percent: bool = False, benchmark: str | None = None
) -> str:
    """``value`` of metric ``name`` as every display shows it: a count (see :func:`is_count`) as
    an integer (or with one decimal if it is not whole), anything else as a percentage with one
    decimal place."""
    if value is None or math.isnan(value):
        return "–"
    if is_count(name, benchmark):
        return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
    return format_pct(to_pct(value, percent=percent))

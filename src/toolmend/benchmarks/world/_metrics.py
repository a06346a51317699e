"""Aggregates of the world benchmark: success and partial credit, pass^k / pass@k with confidence
intervals over tasks, per-fault recovery and per-finding-code outcomes.

pass^k follows τ-bench: for a task run ``n`` times with ``c`` successes, the chance that ``k``
trials drawn without replacement all succeed, ``C(c, k) / C(n, k)``; pass@k is the chance that at
least one does, ``1 - C(n - c, k) / C(n, k)``. Both are averaged over tasks; the 95 % interval is
Student's t over the per-task values.

>>> pass_hat_k(4, 2, 2), pass_at_k(4, 2, 2)
(0.16666666666666666, 0.8333333333333334)
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from scipy import stats

from toolmend.benchmarks._base import SampleScore

__all__ = ["OUTCOMES", "aggregate_world", "mean_ci", "pass_at_k", "pass_hat_k"]

OUTCOMES = ("recovered", "told_user", "skipped", "abandoned", "budget")
"""What became of an injected fault (see :class:`toolmend.world._episode.FaultOutcome`)."""


def pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench's pass^k for one task: ``C(c, k) / C(n, k)``."""
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k for one task: ``1 - C(n - c, k) / C(n, k)``."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval, clipped to [0, 1]; a single value has a zero-width one.

    >>> mean_ci([1.0, 0.0, 1.0, 1.0])[0]
    0.75
    """
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate_world(scores: Sequence[SampleScore]) -> dict[str, float]:
    """Every aggregate of the world benchmark, keyed as documented in the benchmark's docstring."""
    out: dict[str, float] = {"samples": float(len(scores))}
    for key in ("success", "state", "facts", "progress", "harm", "all_or_nothing", "recovery"):
        mean = _mean([v for s in scores if (v := s.values.get(key)) is not None])
        if mean is not None:
            out[key] = mean
    out.update(_trials(scores))
    out.update(_faults(scores))
    out.update(_invalid(scores))
    return out


def _trials(scores: Sequence[SampleScore]) -> dict[str, float]:
    per_task: dict[str, list[bool]] = defaultdict(list)
    for s in scores:
        success = s.values.get("success")
        if success is not None:
            per_task[str(s.details.get("task", s.id))].append(success >= 1.0)
    if not per_task:
        return {}
    n = min(len(v) for v in per_task.values())
    out: dict[str, float] = {"tasks": float(len(per_task)), "trials": float(n)}
    for k in range(1, n + 1):
        for name, fn in (("pass^", pass_hat_k), ("pass@", pass_at_k)):
            # Tasks with more trials than the smallest count (an interrupted run) use their first n.
            values = [fn(n, sum(v[:n]), k) for v in per_task.values()]
            mean, low, high = mean_ci(values)
            out[f"{name}{k}"] = mean
            out[f"{name}{k}_ci_low"] = low
            out[f"{name}{k}_ci_high"] = high
    return out


def _faults(scores: Sequence[SampleScore]) -> dict[str, float]:
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in scores:
        for fault in s.details.get("faults") or []:
            by_kind[str(fault.get("kind"))].append(fault)
    out: dict[str, float] = {}
    total = 0
    for kind in sorted(by_kind):
        faults = by_kind[kind]
        total += len(faults)
        out[f"fault/{kind}/injected"] = float(len(faults))
        for flag in ("detected", "retried", "recovered"):
            out[f"fault/{kind}/{flag}"] = sum(bool(f.get(flag)) for f in faults) / len(faults)
        for outcome in OUTCOMES:
            out[f"fault/{kind}/{outcome}"] = sum(f.get("outcome") == outcome for f in faults) / len(faults)
    if by_kind:
        out["faults_injected"] = float(total)
    return out


def _invalid(scores: Sequence[SampleScore]) -> dict[str, float]:
    by_code: dict[str, list[bool]] = defaultdict(list)
    for s in scores:
        for item in s.details.get("invalid_calls") or []:
            by_code[str(item.get("code"))].append(bool(item.get("fixed")))
    out: dict[str, float] = {}
    for code in sorted(by_code):
        fixed = by_code[code]
        out[f"invalid/{code}/calls"] = float(len(fixed))
        out[f"invalid/{code}/fixed"] = sum(fixed) / len(fixed)
    return out

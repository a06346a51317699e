"""CriticTool's aggregate metrics and its Overall score.

Means follow the official denominators through the ``None`` values of the per-sample scores
(see :mod:`toolmend.benchmarks.critictool._scoring`). Results are percentages, like the paper.

The Overall score is not in the official code. The paper (§2.3.2) gives the dimension weights
Reflect 0.2, Correct 0.3, Retry 0.05, Skip/Finish 0.45; the split inside each dimension is
reconstructed from the paper's tables as an even one::

    Overall = 0.2·mean(Detect, Category) + 0.3·mean(Tool, Args)
            + 0.05·Retry + 0.45·mean(Break, Tool_sf, Args_sf)

which reproduces 8 of the 14 Overall values of Table 2 within 0.15 points from their rounded
sub-scores (the others are off by 0.2-1.2). How the paper merges the skip and finish runs into its
single Skip/Finish column is not stated; here Retry, Break and Tool_sf are the mean of the skip
and finish results, and Args_sf is skip's (finish mode has no argument metric) — an assumption.

>>> round(overall_score(78.71, 69.70, 86.05, 80.25, 20.99, 92.08, 53.66, 42.67), 2)  # GPT-4o, Table 2: 69.01
69.1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from toolmend.benchmarks._base import SampleScore

__all__ = ["WEIGHTS", "aggregate_scores", "overall_score"]

WEIGHTS: dict[str, float] = {
    "detect": 0.10,
    "category": 0.10,
    "tool": 0.15,
    "args": 0.15,
    "retry": 0.05,
    "break": 0.15,
    "skip_finish_tool": 0.15,
    "skip_finish_args": 0.15,
}
"""Weight of each sub-score in Overall (the paper's dimension weights split evenly)."""


def overall_score(
    detect: float,
    category: float,
    tool: float,
    args: float,
    retry: float,
    break_: float,
    skip_finish_tool: float,
    skip_finish_args: float,
) -> float:
    """Overall from the eight sub-scores of the paper's tables (same scale in, same scale out)."""
    subs = {
        "detect": detect,
        "category": category,
        "tool": tool,
        "args": args,
        "retry": retry,
        "break": break_,
        "skip_finish_tool": skip_finish_tool,
        "skip_finish_args": skip_finish_args,
    }
    return sum(WEIGHTS[k] * v for k, v in subs.items())


def _means(scores: Iterable[SampleScore]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in scores:
        for key, value in s.values.items():
            if value is None:
                continue
            sums[key] = sums.get(key, 0.0) + value
            counts[key] = counts.get(key, 0) + 1
    return {k: 100.0 * sums[k] / counts[k] for k in sums}


def _combined(m: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, keys in (
        ("retry", ("skip_retry", "finish_retry")),
        ("break", ("skip_break", "finish_break")),
        ("skip_finish_tool", ("skip_tool", "finish_tool")),
        ("skip_finish_args", ("skip_args",)),
    ):
        present = [m[k] for k in keys if k in m]
        if present:
            out[name] = sum(present) / len(present)
    return out


def _headline(scores: Sequence[SampleScore]) -> dict[str, float]:
    m = _means(scores)
    m |= _combined(m)
    if all(k in m for k in WEIGHTS):
        m["overall"] = sum(w * m[k] for k, w in WEIGHTS.items())
    return m


def aggregate_scores(scores: Sequence[SampleScore]) -> dict[str, float]:
    """CriticTool's metrics over ``scores``, in percent.

    Keys: ``detect``, ``category``, ``tool``, ``args``, ``parse_rate`` (internal; ``thought`` with
    CoT), ``skip_*`` / ``finish_*`` per external mode, the merged ``retry``, ``break``,
    ``skip_finish_tool``, ``skip_finish_args``, and ``overall`` when every part is present. Also
    ``<error_type>/<metric>`` for each internal error type and, when the scores span several
    variants (base, evol), ``<variant>/<metric>``.
    """
    out = _headline(scores)
    by_type: dict[str, list[SampleScore]] = {}
    by_variant: dict[str, list[SampleScore]] = {}
    for s in scores:
        etype = s.details.get("error_type")
        if etype:
            by_type.setdefault(str(etype), []).append(s)
        if s.details.get("variant") is not None:
            by_variant.setdefault(str(s.details["variant"]), []).append(s)
    for etype, group in sorted(by_type.items()):
        for key, value in _means(group).items():
            if key in ("detect", "category", "tool", "args", "thought"):
                out[f"{etype}/{key}"] = value
    if len(by_variant) > 1:
        for variant, group in sorted(by_variant.items()):
            out |= {f"{variant}/{k}": v for k, v in _headline(group).items()}
    return out

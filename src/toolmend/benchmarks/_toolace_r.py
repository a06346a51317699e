"""ToolACE-R's call-sequence overlap, model-aware difficulty and difficulty-band selection.

- :func:`parameter_jaccard` — eq. 2: Jaccard overlap of two calls' ``(name, value)`` argument
  pairs when the tool names agree, else 0;
- :func:`overlap_score` — eq. 3–4: the best one-to-one alignment of predicted and reference
  calls (Hungarian algorithm), summed and divided by the longer sequence;
- :func:`difficulty` — eq. 5: one minus the mean overlap of k sampled predictions;
- :func:`select_by_difficulty` — keep the samples with α < D < β (paper: α = 0, β = 0.9);
- :func:`calls_match` — the "entirely correct" test behind ToolACE-R's accuracy.

Argument values are compared as canonical JSON, so lists and objects count like any value.
Two calls of the same tool with no arguments overlap fully (the paper leaves 0/0 open), and two
empty call sequences have overlap 1.

>>> from toolmend import ToolCall as C
>>> overlap_score([C(name="f", arguments={"a": 1})], [C(name="f", arguments={"a": 1, "b": 2})])
0.5
>>> difficulty([C(name="f")], [[C(name="f")], [C(name="g")]])
0.5
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from scipy.optimize import linear_sum_assignment

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.compare._values import canonical_json

__all__ = [
    "align_calls",
    "calls_match",
    "difficulty",
    "in_band",
    "overlap_score",
    "parameter_jaccard",
    "select_by_difficulty",
]

T = TypeVar("T")


def _pairs(call: ToolCall) -> set[tuple[str, str]]:
    return {(k, canonical_json(v)) for k, v in call.arguments.items()}


def parameter_jaccard(gold: ToolCall, pred: ToolCall) -> float:
    """S_ij (eq. 2): ``|a ∩ a'| / |a ∪ a'|`` over argument pairs if the names match, else 0."""
    if gold.name != pred.name:
        return 0.0
    a, b = _pairs(gold), _pairs(pred)
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def align_calls(pred: Sequence[ToolCall], gold: Sequence[ToolCall]) -> list[tuple[int, int, float]]:
    """The optimal matching of eq. 3 as ``(pred index, gold index, S)`` triples (pairs with S > 0)."""
    if not pred or not gold:
        return []
    scores = np.array([[parameter_jaccard(g, p) for g in gold] for p in pred], dtype=float)
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return [
        (int(i), int(j), float(scores[i, j])) for i, j in zip(rows, cols, strict=True) if scores[i, j] > 0
    ]


def overlap_score(pred: Sequence[ToolCall], gold: Sequence[ToolCall]) -> float:
    """O(A, A′) (eq. 4): the aligned Jaccard mass over ``max(m, m′)``; in [0, 1], order-free.

    >>> from toolmend import ToolCall as C
    >>> overlap_score([], [])
    1.0
    >>> overlap_score([C(name="f")], [])
    0.0
    """
    if not pred and not gold:
        return 1.0
    total = sum(s for _, _, s in align_calls(pred, gold))
    return min(1.0, total / max(len(pred), len(gold)))


def difficulty(gold: Sequence[ToolCall], predictions: Sequence[Sequence[ToolCall]]) -> float:
    """D (eq. 5): ``1 − mean_l O(A, A^(l))`` over k ≥ 1 sampled predictions."""
    if not predictions:
        raise ConfigError("difficulty needs at least one prediction (k ≥ 1)")
    return 1.0 - sum(overlap_score(p, gold) for p in predictions) / len(predictions)


def in_band(d: float, alpha: float = 0.0, beta: float = 0.9) -> bool:
    """Whether α < d < β (both bounds exclusive, as in the paper)."""
    return alpha < d < beta


def select_by_difficulty(
    items: Sequence[T], difficulties: Sequence[float], alpha: float = 0.0, beta: float = 0.9
) -> list[T]:
    """The items whose difficulty lies strictly between ``alpha`` and ``beta``.

    >>> select_by_difficulty(["easy", "ok", "hard"], [0.0, 0.4, 0.95])
    ['ok']
    """
    if len(items) != len(difficulties):
        raise ConfigError(f"{len(items)} items but {len(difficulties)} difficulty scores")
    if alpha >= beta:
        raise ConfigError(f"alpha must be below beta (got alpha={alpha}, beta={beta})")
    return [item for item, d in zip(items, difficulties, strict=True) if in_band(d, alpha, beta)]


def calls_match(pred: Sequence[ToolCall], gold: Sequence[ToolCall]) -> bool:
    """Whether the prediction is entirely correct: the same bag of (name, arguments) calls."""
    if len(pred) != len(gold):
        return False
    key = lambda c: canonical_json([c.name, c.arguments])  # noqa: E731
    return Counter(map(key, pred)) == Counter(map(key, gold))

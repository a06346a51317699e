"""One-to-one alignment of predicted items (usually tool calls) with gold items.

:func:`align` finds the pairing that maximises the total score (the Hungarian method, through
``scipy.optimize.linear_sum_assignment``), so the result does not depend on the order the model
wrote its calls in. :func:`greedy_align` reproduces the first-best greedy matching that several
official scorers use, for their ``compat`` modes.

Both return ``(pred_index, gold_index, score)`` triples: matched pairs, then ``(i, None, 0.0)``
for every unmatched prediction and ``(None, j, 0.0)`` for every unmatched gold item. A pair
whose score is ``<= 0`` is never a match: nothing was shared, so both sides count as unmatched.

>>> calls = ["get_weather", "book_hotel"]
>>> gold = ["book_hotel", "get_weather", "send_mail"]
>>> align(calls, gold, lambda p, g: float(p == g))
[(0, 1, 1.0), (1, 0, 1.0), (None, 2, 0.0)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

__all__ = ["Alignment", "align", "greedy_align"]

T = TypeVar("T")
U = TypeVar("U")

Alignment = list[tuple[int | None, int | None, float]]


def _matrix(pred: Sequence[T], gold: Sequence[U], score: Callable[[T, U], float]) -> np.ndarray:
    m = np.zeros((len(pred), len(gold)), dtype=float)
    for i, p in enumerate(pred):
        for j, g in enumerate(gold):
            m[i, j] = float(score(p, g))
    return m


def _finish(pairs: dict[int, tuple[int, float]], n_pred: int, n_gold: int) -> Alignment:
    out: Alignment = []
    matched_gold = {j for j, _ in pairs.values()}
    for i in range(n_pred):
        if i in pairs:
            j, s = pairs[i]
            out.append((i, j, s))
        else:
            out.append((i, None, 0.0))
    out.extend((None, j, 0.0) for j in range(n_gold) if j not in matched_gold)
    return out


def align(pred: Sequence[T], gold: Sequence[U], score: Callable[[T, U], float]) -> Alignment:
    """The one-to-one pairing of ``pred`` with ``gold`` that maximises the summed ``score``.

    ``score(p, g)`` should be larger for better matches (e.g. 1 for the same tool name plus the
    fraction of matching arguments). The result lists pairs in prediction order, unmatched
    predictions in place, then unmatched gold items in gold order.

    >>> align([1, 2], [2, 1], lambda p, g: float(p == g))
    [(0, 1, 1.0), (1, 0, 1.0)]
    """
    if not pred or not gold:
        return _finish({}, len(pred), len(gold))
    m = _matrix(pred, gold, score)
    # Imported on first use: scipy.optimize takes ~1 s to import, and a run that never aligns
    # (the checklist critic's) should not pay for it.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(m, maximize=True)
    pairs = {int(i): (int(j), float(m[i, j])) for i, j in zip(rows, cols, strict=True) if m[i, j] > 0}
    return _finish(pairs, len(pred), len(gold))


def greedy_align(pred: Sequence[T], gold: Sequence[U], score: Callable[[T, U], float]) -> Alignment:
    """Greedy first-best pairing: each gold item, in gold order, takes the still-unmatched
    prediction with the highest score (the first one on ties).

    This is what order-sensitive official scorers do; it can miss the best total when one
    prediction would suit two gold items. Same return shape as :func:`align`.

    >>> greedy_align(["a", "ab"], ["ab", "a"], lambda p, g: len(set(p) & set(g)) / len(set(g)))
    [(0, 1, 1.0), (1, 0, 1.0)]
    """
    taken: set[int] = set()
    pairs: dict[int, tuple[int, float]] = {}
    for j, g in enumerate(gold):
        best_i, best_s = -1, 0.0
        for i, p in enumerate(pred):
            if i in taken:
                continue
            s = float(score(p, g))
            if s > best_s:
                best_i, best_s = i, s
        if best_i >= 0:
            taken.add(best_i)
            pairs[best_i] = (j, best_s)
    return _finish(pairs, len(pred), len(gold))

"""Near-miss matching of tool names and parameter keys, shared by the checker and repair.

Two strings are *aliases* when they differ only in case and separators (``user_id``,
``userId``, ``user-id``, ``USER ID``; ``math.factorial`` and ``math_factorial``). Beyond that,
candidates are ranked with rapidfuzz's normalised similarity on the folded strings.

>>> fold("userId") == fold("user_id")
True
>>> closest("get_wether", ["get_weather", "get_time"])
['get_weather']
>>> best_match("get_wether", ["get_weather", "get_time"])
'get_weather'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

__all__ = ["NAME_THRESHOLD", "best_match", "closest", "fold", "key_alias"]

NAME_THRESHOLD = 85.0
"""Minimum similarity (0-100, on folded strings) for repair to rename a tool on its own."""

_SEPARATORS = re.compile(r"[\s_\-.:/]+")


def fold(text: str) -> str:
    """Case and separators removed: the form in which aliases compare equal."""
    return _SEPARATORS.sub("", text).lower()


def _scored(query: str, choices: Iterable[str]) -> list[tuple[float, str]]:
    q = fold(query)
    out = []
    for choice in choices:
        c = fold(choice)
        score = 100.0 if c == q else float(fuzz.ratio(q, c))
        out.append((score, choice))
    # Highest score first; ties broken by name so the order never depends on the input order.
    out.sort(key=lambda sc: (-sc[0], sc[1]))
    return out


def closest(query: str, choices: Iterable[str], *, limit: int = 3, cutoff: float = 70.0) -> list[str]:
    """Up to ``limit`` choices most similar to ``query`` scoring at least ``cutoff``, best first."""
    return [c for s, c in _scored(query, choices) if s >= cutoff][:limit]


def best_match(query: str, choices: Iterable[str], *, threshold: float = NAME_THRESHOLD) -> str | None:
    """The one choice close enough to stand for ``query``, or ``None``.

    The tie rule: when two choices share the best score nothing is returned, because picking
    either would be a guess.
    """
    ranked = _scored(query, choices)
    if not ranked or ranked[0][0] < threshold:
        return None
    if len(ranked) > 1 and ranked[1][0] == ranked[0][0]:
        return None
    return ranked[0][1]


def key_alias(key: str, choices: Iterable[str]) -> str | None:
    """The parameter ``key`` most likely meant, when it is an unambiguous near-miss.

    Accepted: the same name up to case and separators, or a small edit distance on the folded
    names (1 edit — a transposition counts as one — for names up to 6 characters, 2 beyond). Ambiguity returns ``None``.

    >>> key_alias("userId", ["user_id", "user_name"])
    'user_id'
    >>> key_alias("cty", ["city", "country"])
    'city'
    >>> key_alias("zzz", ["city"]) is None
    True
    """
    folded = fold(key)
    pool = list(choices)
    exact = [c for c in pool if fold(c) == folded]
    if len(exact) == 1:
        return exact[0]
    if exact:
        return None
    limit = 1 if len(folded) <= 6 else 2
    best: list[tuple[int, str]] = []
    for c in pool:
        d = OSA.distance(folded, fold(c), score_cutoff=limit)
        if d <= limit:
            best.append((d, c))
    if not best:
        return None
    best.sort()
    if len(best) > 1 and best[1][0] == best[0][0]:
        return None
    return best[0][1]

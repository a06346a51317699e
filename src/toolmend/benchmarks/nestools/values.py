"""NesTools' value scoring: ROUGE-L with date normalisation, recursive over lists and dicts.

>>> round(check_score("May 1st, 2024", "2024-05-01"), 6)
1.0
>>> check_score(70, 70.0), check_score("70", 70)
(1.0, 0.0)
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from toolmend.compare.rouge import rouge_l_defined, rouge_l_f

__all__ = ["check_score", "normalize_date", "safe_check_score"]

_ISO_PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}")
_LONG_DATE = re.compile(r"\b[A-Za-z]+ \d+(st|nd|rd|th)?, \d{4}\b")
_FIRST_DAY = re.compile(r"\b(\d+)(st|nd|rd|th)?\b")
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)")
_SUFFIX_DAYS = {
    "st": {1, 21, 31},
    "nd": {2, 22},
    "rd": {3, 23},
    "th": set(range(4, 21)) | set(range(24, 31)),
}


class _Undefined(Exception):
    """ROUGE is undefined for a pair (the ``rouge`` package would raise)."""


def normalize_date(text: str) -> str:
    """``"Month Dth, YYYY"`` (English month, a correct ordinal suffix or none) → ``YYYY-MM-DD``;
    anything else comes back unchanged, as in the official scorer.

    The first number in the text is taken as the day, and the whole text must then parse as
    ``"%B %d, %Y"``, so a date inside a longer sentence stays as it is.

    >>> normalize_date("March 3rd, 2023"), normalize_date("March 3th, 2023"), normalize_date("on May 1, 2024")
    ('2023-03-03', 'March 3th, 2023', 'on May 1, 2024')
    """
    try:
        if _ISO_PREFIX.match(text):
            return datetime.strptime(text, "%Y-%m-%d").strftime("%Y-%m-%d")
        if not _LONG_DATE.search(text):
            return text
        day = _FIRST_DAY.search(text)
        if day is None:
            return text
        suffix = day.group(2)
        if suffix and int(day.group(1)) not in _SUFFIX_DAYS[suffix]:
            return text
        bare = _ORDINAL.sub(r"\1", text)
        return datetime.strptime(bare, "%B %d, %Y").strftime("%Y-%m-%d")
    except ValueError:
        return text


def _rouge(candidate: str, reference: str) -> float:
    if not rouge_l_defined(candidate, reference):
        raise _Undefined
    return rouge_l_f(candidate, reference)


@lru_cache(maxsize=1 << 16)
def _text_score(gold: str, pred: str) -> float | None:
    # Memoised on the raw pair: scorers meet the same (gold, predicted) strings again and again
    # (the alignment and the error breakdown both score a pair; models repeat values). ``None``
    # stands for "undefined", so that the cache also remembers those.
    try:
        score = _rouge(pred.lower(), gold.lower())
        other = _rouge(normalize_date(pred).lower(), normalize_date(gold).lower())
    except _Undefined:
        return None
    return other if other > score else score


def _score(gold: Any, pred: Any, isolate: bool) -> float:
    if gold == pred:
        return 1.0
    if isinstance(gold, str) and isinstance(pred, str):
        text = _text_score(gold, pred)
        if text is None:
            raise _Undefined
        return text
    if isinstance(gold, int | float) and isinstance(pred, int | float):
        # bool is an int here too, as in the official code: only equality can score.
        return float(gold == pred)
    if isinstance(gold, list) and isinstance(pred, list):
        if len(gold) != len(pred):
            return 0.0
        total = 0.0
        for g, p in zip(gold, pred, strict=True):
            total += safe_check_score(g, p, isolate=True) if isolate else _score(g, p, isolate)
        return total / len(gold)
    if isinstance(gold, dict) and isinstance(pred, dict):
        gkeys, pkeys = list(gold), list(pred)
        if len(gkeys) != len(pkeys):
            return 0.0
        total = 0.0
        for gk, pk in zip(gkeys, pkeys, strict=True):
            # keys are compared by position, case-folded and without "_" and spaces
            if _squash_key(gk) == _squash_key(pk):
                total += (
                    safe_check_score(gold[gk], pred[pk], isolate=True)
                    if isolate
                    else _score(gold[gk], pred[pk], isolate)
                )
        return total / len(pkeys)
    return 0.0


def _squash_key(key: Any) -> str:
    return "".join(ch for ch in str(key).lower() if ch not in "_ ")


def check_score(gold: Any, pred: Any) -> float:
    """Credit in [0, 1] for a predicted non-nested parameter value, as NesTools scores it.

    Equal values score 1 (``70 == 70.0``); two strings score the better of the ROUGE-L F of
    their lowercased forms and of their date-normalised lowercased forms; two numbers score
    their equality; same-length lists the mean of element scores; dicts with as many keys the
    sum of value scores of positionally matching keys over the key count; anything else 0.

    Raises ``ValueError`` where the ``rouge`` package would (an empty string anywhere inside);
    the official scorer turns that into 0 for the *whole* value — use :func:`safe_check_score`.
    """
    try:
        return _score(gold, pred, isolate=False)
    except _Undefined as exc:
        raise ValueError("ROUGE-L is undefined for an empty text") from exc


def safe_check_score(gold: Any, pred: Any, *, isolate: bool = False) -> float:
    """:func:`check_score`, with 0 where it raises (the official behaviour). With
    ``isolate=True`` an undefined element of a list or dict scores 0 alone instead of zeroing
    the whole value (used by the improved mode)."""
    if type(gold) is str and type(pred) is str:
        # the common case, without the recursion's dispatch
        if gold == pred:
            return 1.0
        text = _text_score(gold, pred)
        return 0.0 if text is None else text
    try:
        return _score(gold, pred, isolate)
    except (_Undefined, RecursionError, ZeroDivisionError):
        return 0.0

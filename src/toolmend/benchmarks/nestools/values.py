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
from toolmend.errors import ScoringError

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


# The ``rouge`` package rebuilds the LCS recursively, one Python frame per back-tracking step,
# so a long enough text pair hits Python's default recursion limit (1000 frames) and the
# official evaluator's bare ``except`` turns the RecursionError into a 0 for the whole value.
# Below the first back-tracking frame the official run stands on 11 frames (the eval.py script,
# main, eval, process_results_gen, check_score, Rouge.get_scores, _get_scores, the metric's
# lambda, rouge_l_summary_level, _union_lcs, _recon_lcs), plus one check_score frame per
# list/dict level above the string.
_FRAME_LIMIT = 1000
_FRAMES_BELOW = 11
# Back-tracking takes at most (tokens of both sentences + 1) frames and a sentence of c
# characters has at most (c + 1) / 2 tokens; lowercasing at most doubles a length. Pairs
# shorter than this (together) can never overflow, so they skip the exact walk.
_SHORT_PAIR = (_FRAME_LIMIT - _FRAMES_BELOW - 64) // 2


def _sentences(text: str) -> list[list[str]]:
    # the package's cut: pieces between periods, whitespace collapsed, split on single spaces
    return [" ".join(piece.split()).split(" ") for piece in text.split(".") if len(piece) > 0]


def _backtrack_frames(ref: list[str], hyp: list[str]) -> int:
    """Frames the package's recursive LCS reconstruction uses for one sentence pair."""
    n, m = len(ref), len(hyp)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, prev, word = table[i], table[i - 1], ref[i - 1]
        for j in range(1, m + 1):
            if word == hyp[j - 1]:
                row[j] = prev[j - 1] + 1
            else:
                up, left = prev[j], row[j - 1]
                row[j] = up if up > left else left
    i, j, frames = n, m, 1
    while i > 0 and j > 0:
        frames += 1
        if ref[i - 1] == hyp[j - 1]:
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return frames


@lru_cache(maxsize=1024)
def _overflows(gold: str, pred: str, level: int) -> bool:
    """Whether the official ``check_score`` of this string pair, ``level`` list/dict levels
    deep, dies of a RecursionError inside the ``rouge`` package."""
    budget = _FRAME_LIMIT - _FRAMES_BELOW - level
    pairs = ((pred.lower(), gold.lower()), (normalize_date(pred).lower(), normalize_date(gold).lower()))
    for hyp_text, ref_text in pairs:
        hyps, refs = _sentences(hyp_text), _sentences(ref_text)
        for ref in refs:
            for hyp in hyps:
                if len(ref) + len(hyp) + 1 > budget and _backtrack_frames(ref, hyp) > budget:
                    return True
    return False


def _official_text_score(gold: str, pred: str, level: int) -> float:
    if len(gold) + len(pred) >= _SHORT_PAIR and _overflows(gold, pred, level):
        raise _Undefined
    text = _text_score(gold, pred)
    if text is None:
        raise _Undefined
    return text


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


def _score(gold: Any, pred: Any, isolate: bool, level: int = 0) -> float:
    if gold == pred:
        return 1.0
    if isinstance(gold, str) and isinstance(pred, str):
        if not isolate:
            return _official_text_score(gold, pred, level)
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
            total += safe_check_score(g, p, isolate=True) if isolate else _score(g, p, isolate, level + 1)
        return total / len(gold)
    if isinstance(gold, dict) and isinstance(pred, dict):
        gkeys, pkeys = list(gold), list(pred)
        if len(gkeys) != len(pkeys):
            return 0.0
        if not isolate and not all(type(k) is str for k in gkeys + pkeys):
            # The official key comparison lowercases each key, so a non-string key (a Python
            # literal answer can hold {1: ...}) raises there and zeroes the whole value.
            raise _Undefined
        total = 0.0
        for gk, pk in zip(gkeys, pkeys, strict=True):
            # keys are compared by position, case-folded and without "_" and spaces
            if _squash_key(gk) == _squash_key(pk):
                total += (
                    safe_check_score(gold[gk], pred[pk], isolate=True)
                    if isolate
                    else _score(gold[gk], pred[pk], isolate, level + 1)
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

    Raises ``ValueError`` where the official code raises: the ``rouge`` package on an empty
    (or periods-only) text, or on a text pair long enough for its recursive LCS rebuild to pass
    Python's default recursion limit (roughly 990 words in one sentence pair), and the key
    comparison on a dict with a non-string key. The official scorer turns any of these into 0
    for the *whole* value — use :func:`safe_check_score`.

    >>> check_score({"a_b": "x", "c": 1}, {"A B": "x", "c": 2})
    0.5
    >>> safe_check_score({"a": "x", "c": 1}, {"a": "x", 3: 1})  # a non-string key: all 0
    0.0
    >>> safe_check_score(["x", "x " + "y " * 1000], ["x", "x"])  # the deep LCS rebuild: all 0
    0.0
    """
    try:
        return _score(gold, pred, isolate=False)
    except _Undefined as exc:
        raise ScoringError(
            "the official scorer fails on this pair (empty text, a recursion-deep ROUGE-L, or a non-string key)"
        ) from exc


def safe_check_score(gold: Any, pred: Any, *, isolate: bool = False) -> float:
    """:func:`check_score`, with 0 where it raises (the official behaviour). With
    ``isolate=True`` (the improved mode) an undefined element of a list or dict scores 0 alone
    instead of zeroing the whole value, long texts get their real ROUGE-L, and dict keys that
    are not strings are compared as their ``str()``."""
    if type(gold) is str and type(pred) is str and (isolate or len(gold) + len(pred) < _SHORT_PAIR):
        # the common case, without the recursion's dispatch
        if gold == pred:
            return 1.0
        text = _text_score(gold, pred)
        return 0.0 if text is None else text
    try:
        return _score(gold, pred, isolate)
    except (_Undefined, RecursionError, ZeroDivisionError):
        return 0.0

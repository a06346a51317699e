"""Tool-Reflection-Bench correctness, partial score and Repair@N.

The official rule (``benchmark/test.py``, see ``notes/benchmarks.md`` §3): pull the tool calls
out of the reply and the ground truth; any format problem in the reply scores 0; otherwise the
reply is correct when it has as many calls as the gold and the same *set* of
``(name, sorted arguments)`` pairs. The partial score is ``|reply set ∩ gold set| / |gold set|``.

``compat`` keeps the harness's behaviour exactly, including two flaws. The set is built by
hashing argument values, so a list or object argument raises ``TypeError``, which the harness
catches and scores as 0 — such a record cannot be passed. And the format checks run over the
whole reply, so a reflection that quotes the failed call as bare JSON (as many gold replies
do) is a "format error" — as is, through a regex slip, any call with an object argument. Fed
back as predictions, only 49 of the 110 sample gold replies pass. ``improved`` changes five
things: calls and format checks only look outside ``<reflect>``; the bare-call check only looks
outside ``<tool_call>`` blocks;
argument values are compared as canonical JSON (lists and objects work; ``True`` no longer
equals ``1``, while ``1`` still equals ``1.0``); calls are compared as bags rather than sets
(a duplicated call is not the same as two different ones); the partial score counts bag
overlap.

>>> gold = '<reflect>x</reflect><tool_call>{"name": "f", "arguments": {"a": [1]}}</tool_call>'
>>> score_attempt(gold, gold, "compat").correct, score_attempt(gold, gold, "improved").correct
(False, True)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolmend.benchmarks._base import Mode
from toolmend.benchmarks.reflection_bench._tags import official_calls, remove_think, without_reflect
from toolmend.compare._values import canonical_json as canonical

__all__ = ["AttemptScore", "canonical", "repair_at_n", "score_attempt"]

_EMPTY_AFTER_THINK = "ERROR: Content empty after removing think tags"


@dataclass(frozen=True)
class AttemptScore:
    """One attempt: official correctness, partial score, and why it failed (if it did)."""

    correct: bool
    partial: float
    errors: tuple[str, ...] = ()


def _looks_like_calls(text: str) -> bool:
    # The harness's guard for "both sides have no calls": text that still smells of a call
    # (or merely holds brackets) is treated as a failed extraction, not as "no call".
    return ('"name"' in text and '"parameters"' in text) or ("[" in text and "]" in text)


def _official_key(call: dict[str, Any]) -> tuple[Any, ...]:
    name = call.get("name", "")
    args = call.get("arguments", {})
    if isinstance(args, dict):
        return (name, tuple(sorted(args.items())))
    return (name, (args,))


def _official_sort_key(call: dict[str, Any]) -> tuple[Any, str]:
    args = call.get("arguments", {})
    return (call.get("name", ""), json.dumps(args, sort_keys=True) if args else "")


def _improved_key(call: dict[str, Any]) -> str:
    return canonical([call.get("name", ""), call.get("arguments", {})])


def score_attempt(completion: str, ground_truth: str, mode: Mode = "compat") -> AttemptScore:
    """Score one raw reply against the raw ``ground_truth`` text; never raises."""
    if not isinstance(completion, str):
        return AttemptScore(False, 0.0, ("completion is not text",))
    cleaned = remove_think(completion)
    if not cleaned and completion:
        cleaned = _EMPTY_AFTER_THINK
    if mode == "improved":
        # A reflection may quote the failed call as JSON; that is diagnosis, not a call.
        cleaned, ground_truth = without_reflect(cleaned), without_reflect(ground_truth)
    strict = mode == "compat"
    pred, pred_errors = official_calls(cleaned, strict_bare_check=strict)
    gold, _ = official_calls(ground_truth, strict_bare_check=strict)
    if pred_errors:
        return AttemptScore(False, 0.0, tuple(pred_errors))
    if not gold and not pred:
        if _looks_like_calls(ground_truth):
            return AttemptScore(False, 0.0, ("ground truth calls could not be extracted",))
        if _looks_like_calls(cleaned):
            return AttemptScore(False, 0.0, ("completion calls could not be extracted",))
        return AttemptScore(True, 1.0)
    if gold and not pred:
        return AttemptScore(False, 0.0, ("no tool call in completion",))
    if pred and not gold:
        return AttemptScore(False, 0.0, ("tool call where the ground truth has none",))
    if mode == "compat":
        try:
            # The harness sorts calls by (name, JSON arguments) first; mixed name types fail there.
            for calls in (pred, gold):
                sorted(calls, key=_official_sort_key)
            pred_set = {_official_key(c) for c in pred}
            gold_set = {_official_key(c) for c in gold}
        except TypeError as exc:  # unhashable list/dict argument: the harness scores 0
            return AttemptScore(False, 0.0, (f"evaluation error: {exc}",))
        partial = len(pred_set & gold_set) / len(gold_set)
        correct = len(pred) == len(gold) and pred_set == gold_set
        return AttemptScore(correct, 1.0 if pred_set == gold_set else partial)
    pred_bag = Counter(_improved_key(c) for c in pred)
    gold_bag = Counter(_improved_key(c) for c in gold)
    overlap = sum((pred_bag & gold_bag).values())
    correct = pred_bag == gold_bag
    return AttemptScore(correct, 1.0 if correct else overlap / len(gold))


def repair_at_n(correct_by_sample: Sequence[Sequence[bool]], n: int | None = None) -> float:
    """Share of samples where any of the first ``n`` attempts is correct (all attempts if None).

    >>> repair_at_n([[False, True], [False, False]], n=2)
    0.5
    >>> repair_at_n([[False, True], [False, False]], n=1)
    0.0
    """
    if not correct_by_sample:
        return 0.0
    hits = sum(1 for attempts in correct_by_sample if any(attempts[:n] if n else attempts))
    return hits / len(correct_by_sample)

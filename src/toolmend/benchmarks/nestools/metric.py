"""Per-sample NesTools counts: the official procedure (``compat``) and an order-free variant
(``improved``).

Both take the gold chain in the official record shape (see
:func:`~toolmend.benchmarks.nestools.data.gold_chain`), the task text and the model's raw output,
and return the counts that :func:`~toolmend.benchmarks.nestools.benchmark.micro_metrics` sums over
samples (NesTools is micro-averaged: P = Σcorrect / Σpredicted, R = Σcorrect / Σgold).

>>> gold = [{"api_name": "a", "api_id": 1, "parameters": {"x": "hi"}, "responses": ["API_call_0"]},
...         {"api_name": "b", "api_id": 2, "parameters": {"y": "API_call_0"}, "responses": []}]
>>> out = '[{"api_name": "a", "api_id": 1, "parameters": {"x": "hi"}, "responses": {"r": "API_call_0"}},' \\
...       ' {"api_name": "b", "api_id": 2, "parameters": {"y": "API_call_0"}, "responses": {}}]'
>>> c = count_compat(gold, "say hi", out)
>>> c["api_correct"], c["param_correct"], c["nest_correct"], c["tree"]
(2.0, 2.0, 1.0, 1.0)
"""

from __future__ import annotations

import ast
import json
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping
from typing import Any

from toolmend.benchmarks.nestools.data import PLACEHOLDER
from toolmend.benchmarks.nestools.values import safe_check_score
from toolmend.compare.align import align

__all__ = [
    "COUNT_KEYS",
    "count_compat",
    "count_improved",
    "official_format_ok",
    "parse_output",
    "prepare_gold",
]

COUNT_KEYS = (
    "format",
    "api_correct",
    "api_pred",
    "api_gold",
    "order_correct",
    "order_pred",
    "order_gold",
    "param_correct",
    "param_pred",
    "param_gold",
    "nest_correct",
    "nest_pred",
    "nest_gold",
    "tree",
    "para_error_type",
    "para_error_omission",
    "para_error_redundancy",
    "para_error_extraction",
    "para_error_transformation",
    "nest_error_omission",
    "nest_error_unfind",
    "nest_error_wrong_place",
    "nest_error_hallucination",
)

Counts = dict[str, float]


def parse_output(text: str) -> tuple[bool, Any]:
    """The official parse: the text from the first ``[`` to the last ``]``, read as a Python
    literal, else as JSON. Returns ``(ok, value)``; never raises.

    >>> parse_output('Sure! [{"a": true}] done')
    (True, [{'a': True}])
    >>> parse_output("no list here")
    (False, None)
    """
    if not isinstance(text, str):
        return False, None
    # find() gives -1 when there is no "[", and the official slice then starts at the last char.
    chunk = text[text.find("[") : text.rfind("]") + 1]
    json_tried = False
    if "\\" not in chunk:
        # Fast path. Without backslashes, text that is valid JSON is either not a Python literal
        # (true/false/null/NaN: the official code then falls back to JSON anyway) or reads as
        # the same value both ways, so trying JSON first changes no result, only the speed.
        json_tried = True
        try:
            return True, json.loads(chunk)
        except ValueError:
            pass
        except RecursionError:
            return False, None
    try:
        with warnings.catch_warnings():
            # Invalid escapes are a SyntaxWarning in a plain interpreter (where the official
            # scorer runs) but an error under -W error; keep the plain behaviour everywhere.
            warnings.simplefilter("ignore")
            return True, ast.literal_eval(chunk)
    except Exception:  # noqa: BLE001 - literal_eval raises many types on bad input
        pass
    if json_tried:
        return False, None
    try:
        return True, json.loads(chunk)
    except Exception:  # noqa: BLE001
        return False, None


def official_format_ok(data: Any) -> bool:
    """Every item is a dict with ``api_name``, ``api_id`` and a dict ``parameters``; an empty
    list passes (and then scores nothing)."""
    try:
        for item in data:
            keys = item.keys()  # items without .keys() (strings, lists) are format errors
            if not all(k in keys for k in ("api_name", "api_id", "parameters")):
                return False
            if not isinstance(item["parameters"], dict):
                return False
    except Exception:  # noqa: BLE001 - a non-iterable, or items without .keys()
        return False
    return True


def _nested(value: Any) -> bool:
    return PLACEHOLDER in str(value)


def _gold_counts(gold: list[dict[str, Any]]) -> tuple[Counts, dict[str, Any]]:
    """Gold-side counts and the map from a nested gold value to its producer
    ``(gold index, producer api_id, position)`` (or to the value's text when it is not exactly
    one placeholder, e.g. a list of placeholders)."""
    counts: Counts = dict.fromkeys(COUNT_KEYS, 0.0)
    counts["api_gold"] = float(len(gold))
    counts["order_gold"] = float(len(gold) - 1)
    nest_map: dict[str, Any] = {}
    produced: list[list[Any]] = []
    for call in gold:
        params = call["parameters"]
        counts["param_gold"] += len(params)
        produced.append(list(call["responses"]))
        for value in params.values():
            if not _nested(value):
                continue
            counts["nest_gold"] += 1
            where: tuple[int, Any, int] | None = None
            for i, outs in enumerate(produced):
                for pos, out in enumerate(outs):
                    if out == str(value):
                        where = (i, gold[i]["api_id"], pos)
                        break
            nest_map[str(value)] = where if where is not None else str(value)
    return counts, nest_map


def _responses(item: Mapping[str, Any], accept_list: bool = False) -> list[Any]:
    resp = item.get("responses")
    if isinstance(resp, dict):
        return [r if isinstance(r, str) else -1 for r in resp.values()]
    if accept_list and isinstance(resp, list):
        return [r if isinstance(r, str) else -1 for r in resp]
    return []


def _key(value: Any) -> Hashable:
    # The official code would crash on an unhashable api_id; such an id can never equal a gold
    # (integer) id, so a fresh object stands in for it.
    try:
        hash(value)
    except TypeError:
        return object()
    return value


def _order(gold_ids: list[Any], pred_ids: list[Any], counts: Counts) -> None:
    if len(pred_ids) <= 1:
        return
    g = Counter(zip(gold_ids, gold_ids[1:], strict=False))
    p = Counter(zip(pred_ids, pred_ids[1:], strict=False))
    counts["order_pred"] += len(pred_ids) - 1
    counts["order_correct"] += sum((g & p).values())


def _tree(c: Counts) -> float:
    ok = (
        c["api_correct"] == c["api_gold"] == c["api_pred"]
        and c["order_correct"] == c["order_pred"] == c["order_gold"]
        and c["param_correct"] == c["param_pred"] == c["param_gold"]
        and c["nest_gold"] == c["nest_pred"] == c["nest_correct"]
    )
    return 1.0 if ok else 0.0


def _breakdown(
    gold: list[dict[str, Any]],
    pred: list[dict[str, Any]],
    pred_resps: list[list[Any]],
    matches: list[tuple[int, int]],
    task: str,
    counts: Counts,
    *,
    producer_before: bool,
    isolate: bool,
) -> None:
    """The ``--eval_para_error`` counts over aligned pairs (gold index order)."""
    gold_resps = [call["responses"] for call in gold]
    matched: dict[int, int] = {}
    task_low = task.lower()
    for gi, pi in sorted(matches):
        matched[gi] = pi
        g_params, p_params = gold[gi]["parameters"], pred[pi]["parameters"]
        for key, value in g_params.items():
            if _nested(value):
                location: tuple[int, int] | None = None
                for ii, outs in enumerate(gold_resps):
                    for pos, out in enumerate(outs):
                        if out == value and ii in matched and (not producer_before or matched[ii] < pi):
                            location = (matched[ii], pos)
                if location is None:
                    continue
                if key not in p_params:
                    counts["nest_error_omission"] += 1
                    continue
                b = p_params[key]
                if b == "UNK":
                    counts["nest_error_omission"] += 1
                elif not _nested(b):
                    counts["nest_error_unfind"] += 1
                else:
                    outs = pred_resps[location[0]]
                    if location[1] >= len(outs) or outs[location[1]] != b:
                        counts["nest_error_wrong_place"] += 1
            elif key in p_params and _nested(p_params[key]):
                counts["nest_error_hallucination"] += 1
    for gi, pi in matches:
        g_params, p_params = gold[gi]["parameters"], pred[pi]["parameters"]
        counts["para_error_redundancy"] += sum(1 for k in p_params if k not in g_params)
        for key, value in g_params.items():
            if key not in p_params or p_params[key] == "UNK":
                counts["para_error_omission"] += 1
                continue
            b = p_params[key]
            if safe_check_score(value, b, isolate=isolate) != 1:
                if str(value) == str(b):
                    counts["para_error_type"] += 1
                elif str(value).lower() in task_low:
                    counts["para_error_extraction"] += 1
                else:
                    counts["para_error_transformation"] += 1


GoldPrep = tuple[Counts, dict[str, Any]]


def prepare_gold(gold: list[dict[str, Any]]) -> GoldPrep:
    """The gold-side counts and nested-value map of a chain, to reuse across many outputs."""
    return _gold_counts(gold)


def count_compat(
    gold: list[dict[str, Any]], task: str, output: str, *, prepared: GoldPrep | None = None
) -> Counts:
    """Counts exactly as NesTools' official evaluator computes them for one sample.

    Alignment is greedy in prediction order: each predicted call takes, among the still-unmatched
    gold calls with an *equal* ``api_id`` (Python ``==``: ``9031.0`` matches ``9031``, ``"9031"``
    does not), the one with the highest parameter score (the first on ties or when all score 0).
    A nested parameter scores only if the predicted placeholder sits, in an earlier-or-same
    predicted call's ``responses`` **dict**, at the gold position, and that producer was already
    matched to the gold producer. ``prepared`` (from :func:`prepare_gold`) skips the gold pass.
    """
    base, nest_map = prepared if prepared is not None else _gold_counts(gold)
    counts = dict(base)
    ok, data = parse_output(output)
    if not ok or not official_format_ok(data):
        counts["tree"] = _tree(counts)
        return counts
    pred: list[dict[str, Any]] = list(data)
    counts["format"] = 1.0
    _order([g["api_id"] for g in gold], [_key(p["api_id"]) for p in pred], counts)

    remaining: dict[Any, list[int]] = {}
    for gi, call in enumerate(gold):
        remaining.setdefault(call["api_id"], []).append(gi)
    pred_resps: list[list[Any]] = []
    matches: list[tuple[int, int]] = []
    match_set: set[tuple[int, int]] = set()
    for pi, item in enumerate(pred):
        params = item["parameters"]
        counts["api_pred"] += 1
        counts["param_pred"] += len(params)
        pred_resps.append(_responses(item))
        counts["nest_pred"] += sum(1 for v in params.values() if _nested(v))
        pid = _key(item["api_id"])
        cands = remaining.get(pid)
        if not cands:
            continue
        counts["api_correct"] += 1
        best, best_nest, best_g = 0.0, 0.0, -1
        for gi in cands:
            g_params = gold[gi]["parameters"]
            total, nest = 0.0, 0.0
            for key, pv in params.items():
                if key not in g_params:
                    continue
                gv = g_params[key]
                entry = nest_map.get(str(gv))
                if entry:
                    if isinstance(entry, tuple):
                        if isinstance(pv, str):
                            producer, position = -1, -1
                            for i, outs in enumerate(pred_resps):
                                if pv in outs:
                                    producer, position = i, outs.index(pv)
                            if position == entry[2] and (entry[0], producer) in match_set and _nested(pv):
                                total += 1.0
                                nest += 1.0
                    elif gv == pv:
                        total += 1.0
                        nest += 1.0
                else:
                    total += safe_check_score(gv, pv)
            if total > best:
                best, best_nest, best_g = total, nest, gi
        if best == 0:
            best_g = cands[0]
        counts["param_correct"] += best
        counts["nest_correct"] += best_nest
        matches.append((best_g, pi))
        match_set.add((best_g, pi))
        cands.remove(best_g)
    _breakdown(gold, pred, pred_resps, matches, task, counts, producer_before=True, isolate=False)
    counts["tree"] = _tree(counts)
    return counts


def _improved_id(item: Mapping[str, Any], name_to_id: Mapping[str, int]) -> int | None:
    raw = item.get("api_id")
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    name = item.get("api_name")
    return name_to_id.get(name) if isinstance(name, str) else None


def _improved_format_ok(data: Any) -> bool:
    if not isinstance(data, list | tuple):
        return False
    return all(
        isinstance(item, dict)
        and isinstance(item.get("parameters"), dict)
        and ("api_id" in item or isinstance(item.get("api_name"), str))
        for item in data
    )


def count_improved(
    gold: list[dict[str, Any]],
    task: str,
    output: str,
    name_to_id: Mapping[str, int],
    *,
    prepared: GoldPrep | None = None,
) -> Counts:
    """Counts with the official definitions but without the order dependence and format
    accidents of the official alignment (see the benchmark's docstring for the list)."""
    base, nest_map = prepared if prepared is not None else _gold_counts(gold)
    counts = dict(base)
    ok, data = parse_output(output)
    if not ok or not _improved_format_ok(data):
        counts["tree"] = _tree(counts)
        return counts
    pred: list[dict[str, Any]] = list(data)
    counts["format"] = 1.0
    ids = [_improved_id(p, name_to_id) for p in pred]
    _order([g["api_id"] for g in gold], [i if i is not None else object() for i in ids], counts)
    pred_resps = [_responses(p, accept_list=True) for p in pred]
    for item in pred:
        counts["api_pred"] += 1
        counts["param_pred"] += len(item["parameters"])
        counts["nest_pred"] += sum(1 for v in item["parameters"].values() if _nested(v))

    def pair(pi: int, gi: int) -> tuple[float, float]:
        params, g_params = pred[pi]["parameters"], gold[gi]["parameters"]
        total = nest = 0.0
        for key, pv in params.items():
            if key not in g_params:
                continue
            gv = g_params[key]
            entry = nest_map.get(str(gv))
            if entry:
                hit = False
                if isinstance(entry, tuple):
                    _, producer_id, position = entry
                    # Credit when some *other* predicted call of the producer's tool binds this
                    # placeholder at the gold position — independent of where calls are written.
                    hit = isinstance(pv, str) and any(
                        qi != pi and ids[qi] == producer_id and position < len(outs) and outs[position] == pv
                        for qi, outs in enumerate(pred_resps)
                    )
                else:
                    hit = gv == pv
                total += float(hit)
                nest += float(hit)
            else:
                total += safe_check_score(gv, pv, isolate=True)
        return total, nest

    cache: dict[tuple[int, int], tuple[float, float]] = {}

    def weight(pi: int, gi: int) -> float:
        if ids[pi] is None or ids[pi] != gold[gi]["api_id"]:
            return 0.0
        cache[pi, gi] = pair(pi, gi)
        return 1.0 + cache[pi, gi][0]

    matches: list[tuple[int, int]] = []
    for pi, gi, _ in align(range(len(pred)), range(len(gold)), weight):
        if pi is None or gi is None:
            continue
        total, nest = cache[pi, gi]
        counts["api_correct"] += 1
        counts["param_correct"] += total
        counts["nest_correct"] += nest
        matches.append((gi, pi))
    _breakdown(gold, pred, pred_resps, matches, task, counts, producer_before=False, isolate=True)
    counts["tree"] = _tree(counts)
    return counts

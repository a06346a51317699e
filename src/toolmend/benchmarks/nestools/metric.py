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
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from toolmend.benchmarks.nestools.data import PLACEHOLDER_PREFIX
from toolmend.benchmarks.nestools.values import safe_check_score
from toolmend.compare.align import align

__all__ = [
    "COUNT_KEYS",
    "GoldPrep",
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
    if not chunk.startswith("["):
        # No "[" at all (the chunk is then "" or "]"), or the last "]" comes before the first
        # "[" (empty): neither a Python literal nor JSON can be read, so skip both attempts.
        return False, None
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
    return PLACEHOLDER_PREFIX in (value if type(value) is str else str(value))


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


class _Param:
    """One gold parameter, with everything about it that does not depend on the prediction."""

    __slots__ = ("entry", "key", "low", "nested", "producers", "text", "value")

    def __init__(self, key: str, value: Any, nest_map: dict[str, Any], gold_resps: list[list[Any]]) -> None:
        self.key = key
        self.value = value
        self.text = str(value)
        self.low = self.text.lower()
        self.nested = PLACEHOLDER_PREFIX in self.text
        # the final nest-map entry (a later gold value with the same text overwrites an earlier one)
        self.entry = nest_map.get(self.text) if self.nested else None
        # every gold (call, position) producing exactly this value, in scan order
        self.producers = (
            [(ii, pos) for ii, outs in enumerate(gold_resps) for pos, out in enumerate(outs) if out == value]
            if self.nested
            else []
        )


class GoldPrep:
    """The gold-side work of one chain, done once and reused for every output scored against it
    (see :func:`prepare_gold`)."""

    __slots__ = ("base", "by_id", "ids", "nest_map", "pairs", "params", "task", "task_low")

    def __init__(self, gold: list[dict[str, Any]]) -> None:
        self.base, self.nest_map = _gold_counts(gold)
        self.ids = [call["api_id"] for call in gold]
        pairs: dict[tuple[Any, Any], int] = {}
        for pair in zip(self.ids, self.ids[1:], strict=False):
            pairs[pair] = pairs.get(pair, 0) + 1
        self.pairs = pairs
        gold_resps = [call["responses"] for call in gold]
        self.params = [
            {k: _Param(k, v, self.nest_map, gold_resps) for k, v in call["parameters"].items()}
            for call in gold
        ]
        self.by_id: dict[Any, list[int]] = {}
        for gi, api_id in enumerate(self.ids):
            self.by_id.setdefault(api_id, []).append(gi)
        self.task = ""
        self.task_low = ""

    def lowered(self, task: str) -> str:
        if task is not self.task:
            self.task, self.task_low = task, task.lower()
        return self.task_low


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


def _order(prep: GoldPrep, pred_ids: list[Any], counts: Counts) -> None:
    # the multiset intersection of adjacent id pairs (what ``Counter & Counter`` computes)
    if len(pred_ids) <= 1:
        return
    counts["order_pred"] += len(pred_ids) - 1
    seen: dict[tuple[Any, Any], int] = {}
    for pair in zip(pred_ids, pred_ids[1:], strict=False):
        seen[pair] = seen.get(pair, 0) + 1
    gold_pairs = prep.pairs
    counts["order_correct"] += sum(min(n, gold_pairs.get(pair, 0)) for pair, n in seen.items())


def _tree(c: Counts) -> float:
    ok = (
        c["api_correct"] == c["api_gold"] == c["api_pred"]
        and c["order_correct"] == c["order_pred"] == c["order_gold"]
        and c["param_correct"] == c["param_pred"] == c["param_gold"]
        and c["nest_gold"] == c["nest_pred"] == c["nest_correct"]
    )
    return 1.0 if ok else 0.0


def _breakdown(
    prep: GoldPrep,
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
    matched: dict[int, int] = {}
    for gi, pi in sorted(matches):
        matched[gi] = pi
        p_params = pred[pi]["parameters"]
        for key, gp in prep.params[gi].items():
            if gp.nested:
                location: tuple[int, int] | None = None
                for ii, pos in gp.producers:
                    if ii in matched and (not producer_before or matched[ii] < pi):
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
    task_low: str | None = None
    for gi, pi in matches:
        g_params, p_params = prep.params[gi], pred[pi]["parameters"]
        counts["para_error_redundancy"] += sum(1 for k in p_params if k not in g_params)
        for key, gp in g_params.items():
            if key not in p_params:
                counts["para_error_omission"] += 1
                continue
            b = p_params[key]
            if b == "UNK":
                counts["para_error_omission"] += 1
                continue
            value = gp.value
            if value == b or safe_check_score(value, b, isolate=isolate) == 1:
                continue
            if gp.text == str(b):
                counts["para_error_type"] += 1
            else:
                if task_low is None:
                    task_low = prep.lowered(task)
                if gp.low in task_low:
                    counts["para_error_extraction"] += 1
                else:
                    counts["para_error_transformation"] += 1


def prepare_gold(gold: list[dict[str, Any]]) -> GoldPrep:
    """The gold-side counts, nested-value map and per-parameter facts of a chain, to reuse
    across many outputs (``count_compat(..., prepared=prepare_gold(gold))``)."""
    return GoldPrep(gold)


def _start(
    gold: list[dict[str, Any]], output: str, prepared: GoldPrep | None, format_ok: Callable[[Any], bool]
) -> tuple[GoldPrep, Counts, list[dict[str, Any]] | None]:
    """The gold-only counts and the parsed prediction; ``None`` (and the tree rate of an empty
    answer already set) when the output fails ``format_ok``."""
    prep = prepared if prepared is not None else GoldPrep(gold)
    counts = dict(prep.base)
    ok, data = parse_output(output)
    if not ok or not format_ok(data):
        counts["tree"] = _tree(counts)
        return prep, counts, None
    counts["format"] = 1.0
    return prep, counts, list(data)


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
    prep, counts, pred = _start(gold, output, prepared, official_format_ok)
    if pred is None:
        return counts
    pred_ids = [_key(p["api_id"]) for p in pred]
    _order(prep, pred_ids, counts)

    remaining = {k: list(v) for k, v in prep.by_id.items()}
    gold_params = prep.params
    pred_resps: list[list[Any]] = []
    # placeholder -> (predicted call, position): the last call holding it, its first position
    # (the official scan's "last hit wins", without rescanning every earlier call)
    where: dict[str, tuple[int, int]] = {}
    matches: list[tuple[int, int]] = []
    match_set: set[tuple[int, int]] = set()
    api_pred = param_pred = nest_pred = api_correct = 0.0
    for pi, item in enumerate(pred):
        params = item["parameters"]
        api_pred += 1
        param_pred += len(params)
        outs = _responses(item)
        pred_resps.append(outs)
        for pos in range(len(outs) - 1, -1, -1):
            out = outs[pos]
            if type(out) is str:
                where[out] = (pi, pos)
        for v in params.values():
            if _nested(v):
                nest_pred += 1
        cands = remaining.get(pred_ids[pi])
        if not cands:
            continue
        api_correct += 1
        best, best_nest, best_g = 0.0, 0.0, -1
        for gi in cands:
            g_params = gold_params[gi]
            total, nest = 0.0, 0.0
            for key, pv in params.items():
                gp = g_params.get(key)
                if gp is None:
                    continue
                entry = gp.entry
                if entry:
                    if isinstance(entry, tuple):
                        if isinstance(pv, str):
                            producer, position = where.get(pv, (-1, -1))
                            if position == entry[2] and (entry[0], producer) in match_set and _nested(pv):
                                total += 1.0
                                nest += 1.0
                    elif gp.value == pv:
                        total += 1.0
                        nest += 1.0
                else:
                    gv = gp.value
                    total += 1.0 if gv == pv else safe_check_score(gv, pv)
            if total > best:
                best, best_nest, best_g = total, nest, gi
        if best == 0:
            best_g = cands[0]
        counts["param_correct"] += best
        counts["nest_correct"] += best_nest
        matches.append((best_g, pi))
        match_set.add((best_g, pi))
        cands.remove(best_g)
    counts["api_pred"] += api_pred
    counts["param_pred"] += param_pred
    counts["nest_pred"] += nest_pred
    counts["api_correct"] += api_correct
    _breakdown(prep, pred, pred_resps, matches, task, counts, producer_before=True, isolate=False)
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
    prep, counts, pred = _start(gold, output, prepared, _improved_format_ok)
    if pred is None:
        return counts
    ids = [_improved_id(p, name_to_id) for p in pred]
    _order(prep, [i if i is not None else object() for i in ids], counts)
    pred_resps = [_responses(p, accept_list=True) for p in pred]
    for item in pred:
        counts["api_pred"] += 1
        counts["param_pred"] += len(item["parameters"])
        counts["nest_pred"] += sum(1 for v in item["parameters"].values() if _nested(v))
    gold_ids = prep.ids

    def pair(pi: int, gi: int) -> tuple[float, float]:
        params, g_params = pred[pi]["parameters"], prep.params[gi]
        total = nest = 0.0
        for key, pv in params.items():
            gp = g_params.get(key)
            if gp is None:
                continue
            entry = gp.entry
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
                    hit = gp.value == pv
                total += float(hit)
                nest += float(hit)
            else:
                gv = gp.value
                total += 1.0 if gv == pv else safe_check_score(gv, pv, isolate=True)
        return total, nest

    cache: dict[tuple[int, int], tuple[float, float]] = {}

    def weight(pi: int, gi: int) -> float:
        if ids[pi] is None or ids[pi] != gold_ids[gi]:
            return 0.0
        cache[pi, gi] = pair(pi, gi)
        return 1.0 + cache[pi, gi][0]

    known = [i for i in ids if i is not None]
    if len(set(known)) == len(known) and len(prep.by_id) == len(gold_ids):
        # Every id at most once on each side: the calls that share an id are the only pairs with
        # a positive weight, and they are disjoint, so they are the optimal assignment itself.
        pairs = [(pi, prep.by_id[i][0]) for pi, i in enumerate(ids) if i is not None and i in prep.by_id]
        for pi, gi in pairs:
            weight(pi, gi)
    else:
        pairs = [
            (pi, gi)
            for pi, gi, _ in align(range(len(pred)), range(len(gold_ids)), weight)
            if pi is not None and gi is not None
        ]
    matches: list[tuple[int, int]] = []
    for pi, gi in pairs:
        total, nest = cache[pi, gi]
        counts["api_correct"] += 1
        counts["param_correct"] += total
        counts["nest_correct"] += nest
        matches.append((gi, pi))
    _breakdown(prep, pred, pred_resps, matches, task, counts, producer_before=False, isolate=True)
    counts["tree"] = _tree(counts)
    return counts

"""HiTEC's tool-calling F1s (F1 Name, F1 Name + Parameter), and the shared base of the call-list
benchmarks it reports on (API-Bank, ToolAlpaca, Seal-Tools).

HiTEC (§4.1) evaluates "in the same way as Lin et al." (Hammer), whose scorer is micro-averaged
over the whole set:

- **F1 Name** — each predicted call whose tool name is among the gold call names is correct;
  P = correct / predicted calls, R = correct / gold calls;
- **F1 Name + Parameter** — for a correctly named call, each gold argument that the call gives
  with an equal value (compared as ``str``; empty-string values ignored on both sides) is a
  correct parameter; P = correct / predicted parameters, R = correct / gold parameters.

``compat`` follows that scorer: name hits by membership (a repeated call earns credit twice;
precision and recall are capped at 1 where that would push them past it), and a call's
parameters are checked against the *first* gold call of that name that shares any of them. ``improved`` aligns predicted and gold calls one-to-one (Hungarian, names first, then
parameters), so duplicates cannot earn double credit, and also accepts structurally equal
objects whose ``str`` differs (key order).

One deliberate deviation in both modes: Hammer counts a correctly named argument-less call as
one correct parameter while adding nothing to either denominator, which lets the parameter F1
exceed 1 (every set here has such calls). We count an empty argument set as one parameter
"slot" on each side instead, so scores stay in [0, 1] and gold fed back scores exactly 1.

Each sample also gets ToolACE-R's measures: ``accuracy`` (all calls entirely correct) and
``overlap`` (Hungarian-aligned Jaccard, :func:`~toolmend.benchmarks._toolace_r.overlap_score`).

>>> from toolmend import ToolCall as C
>>> c = call_counts([C(name="f", arguments={"a": 1, "b": 2})], [C(name="f", arguments={"a": 1, "b": 3})])
>>> (c.correct_calls, c.correct_params, c.gold_params)
(1, 1, 2)
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.optimize import linear_sum_assignment

from toolmend._schema import Message, Ref, Sample, ToolCall
from toolmend.benchmarks._base import Benchmark, Mode, Prediction, SampleScore
from toolmend.benchmarks._toolace_r import calls_match, overlap_score
from toolmend.compare._values import canonical_json
from toolmend.formats._tools import to_openai_tool

__all__ = [
    "CallCounts",
    "CallListBenchmark",
    "call_counts",
    "hitec_f1",
    "parse_hitec_output",
    "revive_placeholders",
]

_FENCE = re.compile(r"```(?:json|python)?", re.IGNORECASE)
_NAME_KEYS = ("name", "api_name", "api", "Action", "tool")
_ARG_KEYS = ("arguments", "parameters", "args", "param_dict", "Action_Input")


def _as_call(item: Any) -> ToolCall | None:
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("function"), Mapping):  # OpenAI tool_calls entry
        item = item["function"]
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    args: Any = next((item[k] for k in _ARG_KEYS if k in item), {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if name is None or not isinstance(args, dict):
        return None
    return ToolCall(name=name, arguments=args)


def _from_json(data: Any) -> list[ToolCall] | None:
    if isinstance(data, Mapping) and "tool_calls" in data:
        data = data["tool_calls"] or []
    items = data if isinstance(data, list) else [data]
    calls = [_as_call(i) for i in items]
    if any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _literal(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def _from_python(text: str) -> list[ToolCall] | None:
    # API-Bank's own answer format: [ApiName(key='value', ...)], parsed with ast, never eval.
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        # CPython's parser raises MemoryError on some long broken inputs (a model looping on
        # "[f(a=1), "): a reply it cannot read, like any other.
        return None
    body = tree.body
    nodes = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    calls: list[ToolCall] = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name | ast.Attribute):
            return None
        name = ast.unparse(node.func)
        try:
            args = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg is not None}
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, OverflowError):
            return None
        calls.append(ToolCall(name=name, arguments=args))
    return calls


def parse_hitec_output(text: Any) -> list[ToolCall] | None:
    """A model's reply to a call-list benchmark → its list of calls, or ``None`` when it cannot
    be read (a format error, as Hammer's scorer counts it). Not :func:`toolmend.parse_calls`,
    which reports findings: this reader keeps HiTEC's all-or-nothing rule, so scores stay
    comparable.

    Accepts a JSON list of ``{"name", "arguments"}`` objects (also ``parameters`` / ``args``,
    a ``{"tool_calls": [...]}`` wrapper, OpenAI ``function`` entries, a single object, code
    fences, text around the JSON) and API-Bank's ``[Api(key='value')]`` call syntax.

    >>> [c.name for c in parse_hitec_output('```json\\n[{"name": "f", "arguments": {}}]\\n```')]
    ['f']
    >>> parse_hitec_output("[AddAlarm(time='08:00')]")[0].arguments
    {'time': '08:00'}
    >>> parse_hitec_output("sorry") is None
    True
    """
    if not isinstance(text, str):
        return None
    body = _FENCE.sub("", text).strip()
    try:
        return _from_json(json.loads(body))
    except (ValueError, RecursionError):
        pass
    for open_, close in (("[", "]"), ("{", "}")):
        start, end = body.find(open_), body.rfind(close)
        if 0 <= start < end:
            span = body[start : end + 1]
            try:
                return _from_json(json.loads(span))
            except (ValueError, RecursionError):
                calls = _from_python(span) if open_ == "[" else None
                if calls is not None:
                    return calls
    return _from_python(body)


class CallCounts(BaseModel):
    """The micro-average counts of one sample (summed over a set by :func:`hitec_f1`)."""

    model_config = ConfigDict(extra="forbid")

    pred_calls: int = 0
    gold_calls: int = 0
    correct_calls: int = 0
    pred_params: int = 0
    gold_params: int = 0
    correct_params: int = 0
    format_ok: bool = True


def _params(call: ToolCall) -> dict[str, Any]:
    return {k: v for k, v in call.arguments.items() if v != ""}


def _slots(call: ToolCall) -> int:
    return max(1, len(_params(call)))


def _same(a: Any, b: Any, mode: Mode) -> bool:
    if str(a) == str(b):
        return True
    return mode == "improved" and canonical_json(a) == canonical_json(b)


def _correct_params(gold: ToolCall, pred: ToolCall, mode: Mode) -> int:
    g, p = _params(gold), _params(pred)
    if not g and not p:
        return 1  # the empty-arguments slot
    return sum(1 for k, v in g.items() if k in p and _same(v, p[k], mode))


def call_counts(
    pred: Sequence[ToolCall] | None, gold: Sequence[ToolCall], mode: Mode = "compat"
) -> CallCounts:
    """Counts behind HiTEC's F1s for one sample; ``pred=None`` is a reply that did not parse."""
    out = CallCounts(gold_calls=len(gold), gold_params=sum(_slots(c) for c in gold))
    if pred is None:
        out.format_ok = False
        out.pred_calls = 1  # Hammer counts an unreadable reply as one (wrong) predicted call
        return out
    out.pred_calls = len(pred)
    out.pred_params = sum(_slots(c) for c in pred)
    if mode == "compat":
        gold_names = {g.name for g in gold}
        for p in pred:
            if p.name not in gold_names:
                continue
            out.correct_calls += 1
            out.correct_params += next(
                (n for g in gold if g.name == p.name if (n := _correct_params(g, p, mode)) > 0), 0
            )
        return out
    if pred and gold:
        weights = np.array(
            [
                [(1000.0 + _correct_params(g, p, mode)) if g.name == p.name else 0.0 for g in gold]
                for p in pred
            ]
        )
        rows, cols = linear_sum_assignment(weights, maximize=True)
        for i, j in zip(rows, cols, strict=True):
            if weights[i, j] > 0:
                out.correct_calls += 1
                out.correct_params += int(weights[i, j] - 1000.0)
    return out


def _f1(correct: float, predicted: float, gold: float) -> tuple[float, float, float]:
    # compat's membership rule lets a repeated call count twice, so recall could pass 1: cap it.
    p = min(1.0, correct / predicted) if predicted else 0.0
    r = min(1.0, correct / gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def hitec_f1(counts: Iterable[CallCounts]) -> dict[str, float]:
    """Micro-averaged precision / recall / F1 for names and for names + parameters."""
    rows = list(counts)
    tot = {f: sum(getattr(c, f) for c in rows) for f in CallCounts.model_fields if f != "format_ok"}
    pn, rn, fn = _f1(tot["correct_calls"], tot["pred_calls"], tot["gold_calls"])
    pp, rp, fp = _f1(tot["correct_params"], tot["pred_params"], tot["gold_params"])
    return {
        "f1_name": fn,
        "precision_name": pn,
        "recall_name": rn,
        "f1_name_param": fp,
        "precision_param": pp,
        "recall_param": rp,
    }


_DEFAULT_SYSTEM = (
    "You can use the tools described below. Decide which of them to call, with which arguments, "
    "to serve the user's latest request. Reply with the calls only, as a JSON list: "
    '[{{"name": "<tool name>", "arguments": {{"<parameter>": <value>}}}}]\n\nTools:\n{tools}'
)


class CallListBenchmark(Benchmark):
    """Base of the sets HiTEC and ToolACE-R report on: the model answers with a list of calls.

    ``score`` gives per-sample ``f1_name`` / ``f1_name_param`` (that sample's own F1),
    ``accuracy``, ``overlap`` and ``format``; ``aggregate`` gives the micro F1s over the whole
    set (as published), their precisions and recalls, and the means of the others. Pass
    ``prompt_template`` (the system prompt, with a ``{tools}`` slot) to replace the instruction.
    """

    headline = "accuracy"

    def __init__(self, *, prompt_template: str | None = None) -> None:
        self.system_template = prompt_template or _DEFAULT_SYSTEM

    def _data_path(self, path: str | Path | None) -> Path:
        from toolmend._shared import shared_dir

        return Path(path) if path is not None else shared_dir() / self.default_data

    def prompt(self, sample: Sample) -> list[Message]:
        tools = json.dumps([to_openai_tool(t) for t in sample.tools], ensure_ascii=False, indent=1)
        system = Message(role="system", content=self.system_template.format(tools=tools))
        return [system, *(m for m in sample.messages if m.role != "system")]

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        text = prediction if isinstance(prediction, str) else (prediction[0] if prediction else "")
        pred = parse_hitec_output(text)
        counts = call_counts(pred, sample.target, mode)
        one = hitec_f1([counts])
        values: dict[str, float | None] = {
            "f1_name": one["f1_name"],
            "f1_name_param": one["f1_name_param"],
            "accuracy": float(pred is not None and calls_match(pred, sample.target)),
            "overlap": overlap_score(pred, sample.target) if pred is not None else 0.0,
            "format": float(pred is not None),
        }
        details = {
            "counts": counts.model_dump(),
            "parsed": None if pred is None else [c.model_dump() for c in pred],
        }
        return SampleScore(id=sample.id, values=values, details=details)

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        counts = [CallCounts.model_validate(s.details["counts"]) for s in scores if "counts" in s.details]
        out = hitec_f1(counts)
        n = len(scores) or 1
        for key in ("accuracy", "overlap", "format"):
            out[key] = sum((s.values.get(key) or 0.0) for s in scores) / n
        out["n_samples"] = float(len(scores))
        return out


_PLACEHOLDER = re.compile(r"^API_call_\d+$")


def revive_placeholders(args: Mapping[str, Any]) -> dict[str, Any]:
    """Exact ``"API_call_n"`` values → :class:`~toolmend.Ref` (Seal-Tools / NesTools nesting)."""
    return {k: Ref(target=v) if isinstance(v, str) and _PLACEHOLDER.match(v) else v for k, v in args.items()}

"""CriticTool's per-sample metrics, computed as the official evaluators compute them.

Internal errors (one reply per sample): ``detect`` and ``parse_rate`` on every sample;
``category``, ``tool``, ``args`` (and ``thought`` with CoT) on error-injected samples only — they
are ``None`` on error-free ones, which keeps those out of the denominators as the official means do.

External errors (the list of replies of the retry loop): ``<mode>_retry``, ``<mode>_break``,
``<mode>_tool``, ``skip_args`` (skip only) and ``<mode>_parse_rate`` (``<mode>_thought`` with CoT),
where ``<mode>`` is ``skip`` or ``finish``; every external sample is in every denominator.

Argument similarity is a sentence-embedding cosine clamped at 0. The official model is
``all-mpnet-base-v2``; toolmend's default is :class:`toolmend.compare.embed.Embedder` (MiniLM), so
numbers computed with the default differ slightly from the official ones — pass
``similarity=`` to use another model (or a deterministic function in tests).

Mode ``compat`` reproduces the official code, quirks included: extra argument keys are not
penalised when the gold call has arguments, numeric values that differ get embedding credit on
their string form, a missing *optional* gold key scores 0.5. Mode ``improved`` is *strict*: on top
of that, any predicted key the gold call lacks sets the argument score to 0, as the paper's text
(Appendix C.3.2) says it should.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from toolmend.benchmarks.base import Mode, Prediction, SampleScore
from toolmend.formats.critictool import CATEGORIES, FINISH, ParsedAction, parse_action
from toolmend.schema import Sample, Tool

__all__ = [
    "CachedSimilarity",
    "SimilarityFn",
    "arg_score",
    "finish_reference",
    "gold_actions",
    "gold_prediction",
    "similarity_pairs",
    "score_sample",
]

SimilarityFn = Callable[[str, str], float]
"""``similarity(a, b) -> cosine`` on two strings; values below 0 are clamped by the scorer."""

_ANY = object()
# The official type table (exact spellings; anything else is treated as a string parameter).
_TYPEMAP: dict[str, Any] = {
    "NUMBER": int,
    "integer": int,
    "FLOAT": float,
    "float": float,
    "BOOLEAN": bool,
    "boolean": bool,
    "STRING": str,
    "string": str,
    "array": list,
    "dict": dict,
    "any": _ANY,
}
_CJK = re.compile(r"[\u4e00-\u9fff]")


class CachedSimilarity:
    """Clamped, memoised similarity on ``str()`` of both sides; the default model loads on first use.

    >>> sim = CachedSimilarity(lambda a, b: 1.0 if a == b else -0.3)
    >>> sim(12, "12"), sim("x", "y")
    (1.0, 0.0)

    :meth:`warm` computes many pairs at once — in one embedding batch for the default embedder
    (or any ``similarity`` that is a bound ``cosine`` of an object with ``cosine_many``), which
    costs a fraction of one model call per pair.
    """

    def __init__(self, fn: SimilarityFn | None) -> None:
        self._fn = fn
        self._memo: dict[tuple[str, str], float] = {}

    def __call__(self, a: Any, b: Any) -> float:
        key = (_text(a), _text(b))
        if key not in self._memo:
            self._memo[key] = max(0.0, float(self._function()(*key)))
        return self._memo[key]

    def _function(self) -> SimilarityFn:
        if self._fn is None:
            self._fn = _default_similarity()
        return self._fn

    def warm(self, pairs: Iterable[tuple[Any, Any]]) -> int:
        """Compute every pair not yet known, batched when the similarity allows; returns how many.

        >>> sim = CachedSimilarity(lambda a, b: 0.5)
        >>> sim.warm([("a", "b"), ("a", "b"), (1, 2)]), sim.warm([("a", "b")])
        (2, 0)
        """
        todo = list(dict.fromkeys(k for a, b in pairs if (k := (_text(a), _text(b))) not in self._memo))
        if not todo:
            return 0
        fn = self._function()
        many = getattr(getattr(fn, "__self__", None), "cosine_many", None)
        if getattr(fn, "__name__", "") == "cosine" and callable(many):
            values = [float(v) for v in many(todo)]
        else:
            values = [float(fn(a, b)) for a, b in todo]
        for key, value in zip(todo, values, strict=True):
            self._memo[key] = max(0.0, value)
        return len(todo)


def _default_similarity() -> SimilarityFn:
    from toolmend.compare.embed import Embedder  # lazy: pulls sentence-transformers and torch

    return Embedder().cosine


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # str() of an int beyond the digit limit
        return repr(type(value))


def _param_type(tool: Tool, key: str) -> Any:
    schema = tool.properties.get(key)
    if not isinstance(schema, dict):
        # The official code raises KeyError here (a gold key the spec lacks); score it as a string.
        return str
    original = schema.get("x-original-type", schema.get("type"))
    return _TYPEMAP.get(original, str) if isinstance(original, str) else str


def arg_score(
    tools: Sequence[Tool],
    pred: ParsedAction,
    gold_args: Any,
    similarity: Callable[[Any, Any], float],
    *,
    strict: bool = False,
) -> float:
    """The official argument score of ``pred`` against the gold ``args`` (0..1).

    ``similarity`` is applied to values that are not string-equal. ``strict`` sets the score to 0
    when ``pred`` has a key the gold call lacks.
    """
    spec = next((t for t in tools if t.name == pred.name), None)
    if spec is None or not isinstance(pred.args, dict):
        return 0.0
    known = set(spec.properties)
    if not isinstance(gold_args, dict) or not gold_args:
        if strict:
            return 1.0 if not pred.args else 0.0
        return 1.0 if all(k in known for k in pred.args) else 0.0
    if strict and any(k not in gold_args for k in pred.args):
        return 0.0
    required = set(spec.required)
    total = 0.0
    for key, gold in gold_args.items():
        if key in pred.args:
            value = pred.args[key]
            expected = _param_type(spec, key)
            if expected is _ANY or isinstance(value, expected):
                total += 1.0 if _text(value) == _text(gold) else similarity(value, gold)
            elif (
                type(value) is type(gold)
                and isinstance(gold, str)
                and not _CJK.search(gold)
                and not _CJK.search(value)
            ):
                total += similarity(value, gold)
        elif key not in required:
            total += 0.5
    return total / len(gold_args)


def finish_reference(failed_tool: str) -> str:
    """The reference message of finish mode (the official string has no space before the name)."""
    return (
        "I encountered an issue while trying to call"
        + failed_tool
        + ", please let me know how you would like to proceed."
    )


def gold_actions(sample: Sample) -> list[dict[str, Any]]:
    """The gold actions as the official records hold them (``name``, ``args``, ``thought``?).

    Loaded samples carry them in ``metadata["gold"]``; for a Sample built by hand they are derived
    from ``target`` (a ``FinishAction`` target's ``answer`` argument becomes its string args).
    """
    gold = sample.metadata.get("gold")
    if isinstance(gold, list) and all(isinstance(a, dict) for a in gold):
        return gold
    out: list[dict[str, Any]] = []
    for call in sample.target:
        args: Any = call.arguments
        if call.name == FINISH and set(args) == {"answer"}:
            args = args["answer"]
        out.append({"name": call.name, "args": args})
    return out


def _has_args(p: ParsedAction) -> bool:
    return isinstance(p.args, dict) or bool(p.args)


def _parsed_ok(p: ParsedAction, cot: bool) -> bool:
    return bool(p.name) and _has_args(p) and (not cot or bool(p.thought))


def _internal(
    sample: Sample, text: str, sim: CachedSimilarity, strict: bool
) -> tuple[dict[str, float | None], list[ParsedAction]]:
    meta = sample.metadata
    gold = (gold_actions(sample) or [{}])[0]
    cot = bool(meta.get("cot"))
    etype = meta.get("error_type")
    p = parse_action(text)
    ok = _parsed_ok(p, cot)
    values: dict[str, float | None] = {"parse_rate": float(ok)}
    if not etype:
        values |= {"detect": float(not p.error and ok), "category": None, "tool": None, "args": None}
        if cot:
            values["thought"] = None
        return values, [p]
    tool = bool(p.name) and p.name == gold.get("name")
    values["detect"] = float(bool(p.error))
    values["category"] = float(p.error in CATEGORIES and p.error == etype)
    values["tool"] = float(tool)
    values["args"] = arg_score(sample.tools, p, gold.get("args"), sim, strict=strict) if tool else 0.0
    if cot:
        # An empty (or missing) thought scores 0 without asking the similarity: an embedding of
        # "" is not orthogonal to everything, and the official scorer skips it too.
        values["thought"] = sim(p.thought, gold.get("thought", "")) if p.thought else 0.0
    return values, [p]


def _external(
    sample: Sample, outputs: list[str], sim: CachedSimilarity, strict: bool
) -> tuple[dict[str, float | None], list[ParsedAction]]:
    meta = sample.metadata
    failed, nxt = ([*gold_actions(sample), {}, {}])[:2]
    mode = meta.get("external_mode") or "skip"
    cot = bool(meta.get("cot"))
    parsed = [parse_action(o) for o in outputs]
    ok = all(_parsed_ok(p, cot) for p in parsed)
    retry = brk = tool = args = thought = 0.0
    ref = finish_reference(str(failed.get("name")))
    # No early exit: the official scorer walks every reply (only the last differs in a real episode).
    for p in parsed:
        if p.same_call(failed.get("name"), failed.get("args")):
            retry = 1.0
            continue
        if ok:
            brk = 1.0
        if mode == "skip":
            if cot:
                thought = sim(p.thought, nxt.get("thought", ""))
            if p.name == nxt.get("name"):
                tool = 1.0
                if p.name != FINISH:
                    args = arg_score(sample.tools, p, nxt.get("args"), sim, strict=strict)
                else:
                    args = sim(p.args, nxt.get("args"))
        else:
            if cot:
                thought = sim(p.thought, ref)
            if p.name == FINISH:
                tool = 1.0
                if cot:
                    thought = max(thought, sim(p.args, ref))
    values: dict[str, float | None] = {
        f"{mode}_retry": retry,
        f"{mode}_break": brk,
        f"{mode}_tool": tool,
        f"{mode}_parse_rate": float(ok),
    }
    if mode == "skip":
        values["skip_args"] = args
    if cot:
        values[f"{mode}_thought"] = thought
    return values, parsed


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=repr))
    except (ValueError, RecursionError):
        return repr(value)


def similarity_pairs(
    samples: Iterable[Sample], predictions: Iterable[Prediction], mode: Mode = "compat"
) -> list[tuple[str, str]]:
    """The text pairs :func:`score_sample` compares for these predictions (distinct, in order).

    The scorer asks for the same pairs whatever similarity it is given (a similarity only feeds
    sums, never a branch), so one pass with a recording similarity finds them all; embedding
    them in one batch before scoring is much cheaper than one model call per pair.
    """
    seen: dict[tuple[str, str], None] = {}

    def record(a: str, b: str) -> float:
        seen[(a, b)] = None
        return 0.0

    probe = CachedSimilarity(record)
    for sample, prediction in zip(samples, predictions, strict=True):
        score_sample(sample, prediction, mode=mode, similarity=probe)
    return list(seen)


def score_sample(
    sample: Sample,
    prediction: Prediction,
    *,
    mode: Mode = "compat",
    similarity: SimilarityFn | Callable[[Any, Any], float] | None = None,
) -> SampleScore:
    """Score one CriticTool sample; never raises on a malformed reply.

    ``prediction`` is the raw reply for an internal sample and the list of replies of the retry
    loop for an external one (a single string is taken as a one-reply episode; for an internal
    sample given a list, the last reply is scored).
    """
    sim = similarity if isinstance(similarity, CachedSimilarity) else CachedSimilarity(similarity)
    strict = mode == "improved"
    meta = sample.metadata
    outputs = [prediction] if isinstance(prediction, str) else list(prediction)
    if meta.get("part") == "external":
        values, parsed = _external(sample, outputs, sim, strict)
    else:
        values, parsed = _internal(sample, outputs[-1] if outputs else "", sim, strict)
    details = {
        "part": meta.get("part"),
        "external_mode": meta.get("external_mode"),
        "error_type": meta.get("error_type"),
        "variant": meta.get("variant"),
        "cot": bool(meta.get("cot")),
        "parsed": [_jsonable(p.model_dump()) for p in parsed],
    }
    return SampleScore(id=sample.id, values=values, details=details)


def gold_prediction(sample: Sample) -> Prediction:
    """The replies a perfect model would give (they score 1 on every metric).

    >>> # internal: '{"error": "<type>", "name": ..., "args": ...}'; external: [failed call, next step]
    """
    meta = sample.metadata
    gold = gold_actions(sample)
    cot = bool(meta.get("cot"))

    def dump(action: dict[str, Any], **extra: Any) -> str:
        body: dict[str, Any] = dict(extra)
        if cot:
            body["thought"] = action.get("thought", "")
        body |= {"name": action["name"], "args": action["args"]}
        return json.dumps(body, ensure_ascii=False)

    if meta.get("part") != "external":
        return dump(gold[0], error=meta.get("error_type") or "")
    if meta.get("external_mode") == "finish":
        ref = finish_reference(str(gold[0].get("name")))
        finish = {"name": FINISH, "args": ref, "thought": ref}
        return [dump(gold[0]), dump(finish)]
    return [dump(gold[0]), dump(gold[1])]

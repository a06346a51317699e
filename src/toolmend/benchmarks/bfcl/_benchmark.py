"""The BFCL benchmark (AST categories and irrelevance), registered as ``"bfcl"``.

>>> from toolmend.benchmarks.bfcl._decode import render_python
>>> bench = BFCLBenchmark()
>>> samples = bench.load(categories=["simple_python"])
>>> gold = render_python(samples[0].target)
>>> bench.score(samples[0], gold).values
{'accuracy': 1.0}
>>> bench.score(samples[0], "I don't know").details["error_type"]
'ast_decoder:decoder_failed'

``compat`` reproduces BFCL's verdicts and ``error_type`` labels. ``improved`` changes exactly:

1. parallel categories: calls are assigned to expected calls by an optimal matching, so a
   sample passes whenever *some* one-to-one assignment passes (BFCL's greedy scan can fail
   such samples);
2. irrelevance: a reply that fails to decode but looks like an attempted call (a tool-call tag,
   JSON with a name and arguments, ``name(key=...)`` syntax, an offered tool's name followed by
   ``(``), or that decodes to something that is not a call list, is a failure
   (``irrelevance_error:malformed_call``) instead of a correct abstention; ``details["outcome"]``
   says which of ``abstained`` / ``text`` / ``malformed`` / ``call`` the reply was;
3. decoding: unary operators are applied as written (BFCL reads ``+5`` and ``not x`` as
   negations of their operand).

In both modes arithmetic values are computed by a literal-only evaluator, never ``eval``
(see :mod:`toolmend.benchmarks.bfcl._decode`).

The multi-turn categories (``multi_turn_base``, ``multi_turn_miss_func``,
``multi_turn_miss_param``, ``multi_turn_long_context``) are episodes in BFCL's executable classes;
see :mod:`toolmend.benchmarks.bfcl._multi_turn` for the loop, the checker and what ``improved``
changes there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, DatasetError
from toolmend._schema import Message, Sample, Tool
from toolmend._shared import shared_dir
from toolmend.benchmarks._base import BENCHMARKS, Benchmark, Generate, Mode, Prediction, SampleScore
from toolmend.benchmarks.bfcl import _multi_turn as mt
from toolmend.benchmarks.bfcl._checker import ast_check
from toolmend.benchmarks.bfcl._data import SUPPORTED_CATEGORIES, load_bfcl
from toolmend.benchmarks.bfcl._decode import classify_output, decode, is_empty_output, render_python

__all__ = ["DEFAULT_SYSTEM_PROMPT", "BFCLBenchmark", "bfcl_function_doc"]

DEFAULT_SYSTEM_PROMPT = """\
You can answer the user's request by calling one or more of the functions described below.

When calls are needed, reply with nothing except a Python-style list of calls that uses keyword
arguments only, for example:
[function_one(city='Paris', days=3), function_two(values=[1, 2], verbose=True)]

Call only functions from the list and give each argument the type its description asks for.
If no function fits the request, or the request lacks something a call needs, do not write any
call: answer in plain words instead.

Available functions (JSON):
{functions}"""
"""Our prompting-mode system prompt; ``{functions}`` is replaced by the function docs as JSON."""


def bfcl_function_doc(tool: Tool) -> dict[str, Any]:
    """A tool as a BFCL-style function doc: the original type names restored, ``x-`` keys dropped.

    >>> from toolmend.formats._tools import load_tool
    >>> t = load_tool({"name": "f", "parameters": {"type": "dict",
    ...     "properties": {"x": {"type": "float"}}, "required": ["x"]}})
    >>> bfcl_function_doc(t)["parameters"]
    {'type': 'dict', 'properties': {'x': {'type': 'float'}}, 'required': ['x']}
    """

    def restore(schema: Any) -> Any:
        if isinstance(schema, dict):
            out = {k: restore(v) for k, v in schema.items() if not k.startswith("x-")}
            if isinstance(schema.get("x-original-type"), str):
                out["type"] = schema["x-original-type"]
            return out
        if isinstance(schema, list):
            return [restore(v) for v in schema]
        return schema

    params = restore(tool.parameters)
    if tool.metadata.get("dialect") == "bfcl" and params.get("type") == "object":
        params["type"] = "dict"
    return {"name": tool.name, "description": tool.description, "parameters": params}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    return repr(value)


def _is_multi_turn(sample: Sample) -> bool:
    return _category(sample) in mt.MULTI_TURN_CATEGORIES


def _category(sample: Sample) -> str:
    category = sample.metadata.get("category")
    if isinstance(category, str):
        return category
    # BFCL ids are "<category>_<index>" (live ones "<category>_<i>-<j>-<k>").
    return sample.id.rsplit("_", 1)[0]


@BENCHMARKS.register("bfcl")
class BFCLBenchmark(Benchmark):
    """BFCL's single-turn AST categories and (ir)relevance.

    ``underscore_to_dot`` mirrors BFCL's per-model flag for APIs that forbid dots in function
    names: expected names are compared with dots replaced by underscores. ``prompt_template``
    replaces the system prompt :data:`DEFAULT_SYSTEM_PROMPT` (keep ``{functions}`` in it).
    """

    load_options = ("categories", "faults", "fault_seed")
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "bfcl"
    default_data = "data/bfcl"
    reply_format = "python"
    headline = "accuracy"
    detail_keys = ("category", "error_type", "outcome")
    count_keys = ("faults_injected", "fault/*/injected")

    def __init__(self, *, underscore_to_dot: bool = False, prompt_template: str | None = None) -> None:
        self.underscore_to_dot = underscore_to_dot
        self.system_prompt = prompt_template if prompt_template is not None else DEFAULT_SYSTEM_PROMPT

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Samples from ``path`` (default: the shared ``data/bfcl``); option ``categories``
        restricts the categories (default: every supported category with a file present). The
        multi-turn categories are loaded only when asked for, from ``path`` where it holds their
        files and else from the installed ``bfcl-eval`` package; options ``faults`` and
        ``fault_seed`` schedule faults on their functions (:func:`~toolmend.benchmarks.bfcl._multi_turn.attach_faults`)."""
        self.check_load_options(options)
        root = Path(path) if path is not None else shared_dir() / self.default_data
        categories = options.get("categories")
        faults = str(options.get("faults") or "none")
        try:
            fault_seed = int(options.get("fault_seed") or 0)
        except (TypeError, ValueError):
            raise ConfigError(f"fault_seed must be an integer, got {options.get('fault_seed')!r}") from None
        if isinstance(categories, str):  # -o categories=simple_python,multiple
            categories = [c.strip() for c in categories.split(",") if c.strip()]
        if categories is None:
            if faults != "none":
                raise ConfigError("faults apply to the multi-turn categories: name them with --categories")
            return load_bfcl(root, categories=None)
        wanted = list(dict.fromkeys(categories))
        unknown = [c for c in wanted if c not in SUPPORTED_CATEGORIES and c not in mt.MULTI_TURN_CATEGORIES]
        if unknown:
            supported = ", ".join((*SUPPORTED_CATEGORIES, *mt.MULTI_TURN_CATEGORIES))
            raise DatasetError(f"unsupported BFCL categories {unknown}; supported: {supported}", path=root)
        single = [c for c in wanted if c not in mt.MULTI_TURN_CATEGORIES]
        multi = [c for c in wanted if c in mt.MULTI_TURN_CATEGORIES]
        samples = load_bfcl(root, categories=single) if single else []
        if faults != "none" and not multi:
            raise ConfigError("faults apply to the multi-turn categories only; none is among --categories")
        if multi:
            loaded = mt.load_multi_turn(path, multi)
            samples.extend(mt.attach_faults(loaded, faults, fault_seed) if faults != "none" else loaded)
        return samples

    def gold(self, sample: Sample) -> Prediction:
        """The gold calls as a Python call list (the first accepted value of each argument); for a
        multi-turn sample, one reply per step (:func:`~toolmend.benchmarks.bfcl._multi_turn.gold_replies`)."""
        if _is_multi_turn(sample):
            return mt.gold_replies(sample)
        return render_python(sample.target)

    def gold_index(self, sample: Sample, messages: list[Message]) -> int | None:
        """Which gold reply answers ``messages`` in a multi-turn episode (a reply that ends a turn
        is followed by the next turn's user message, not by a tool result)."""
        if _is_multi_turn(sample):
            return mt.gold_index(sample, self.prompt(sample), messages)
        return None

    def for_native_tools(self, samples: list[Sample]) -> list[Sample]:
        """Samples as BFCL's function-calling (FC) mode sends them: the functions go out through
        the API only, so :meth:`prompt` sends no system prompt of ours (no "reply with a Python
        list", no function docs), just the question. Multi-turn samples offer the API only the
        first turn's functions: a run's tool list is fixed, so a held-out function
        (``miss_func``) reaches the model as text in its turn."""
        out = []
        for sample in samples:
            update: dict[str, Any] = {"metadata": {**sample.metadata, "tool_mode": "native"}}
            if _is_multi_turn(sample):
                offered = set(sample.metadata.get("offered", []))
                update["tools"] = [t for t in sample.tools if t.name in offered]
            out.append(sample.model_copy(update=update))
        return out

    async def solve(self, sample: Sample, generate: Generate) -> Prediction:
        """One request; a multi-turn sample runs BFCL's episode in the classes' state."""
        if _is_multi_turn(sample):
            return await mt.run_episode(sample, self.prompt(sample), generate)
        return await generate(self.prompt(sample))

    def prompt(self, sample: Sample) -> list[Message]:
        """A system message with the instructions and function docs, then the question; a
        system message already in the question is appended to ours. A multi-turn sample lists
        the functions its first turn offers and adds :data:`~toolmend.benchmarks.bfcl._multi_turn.MULTI_TURN_NOTE`.
        A sample prepared for native tools (:meth:`for_native_tools`) is the question alone, as
        in BFCL's FC mode."""
        if sample.metadata.get("tool_mode") == "native":
            return [m.model_copy() for m in sample.messages]
        tools = sample.tools
        system = self.system_prompt
        if _is_multi_turn(sample):
            offered = set(sample.metadata.get("offered", []))
            tools = [t for t in sample.tools if t.name in offered]
            system = system + mt.MULTI_TURN_NOTE
        docs = json.dumps([bfcl_function_doc(t) for t in tools], indent=2, ensure_ascii=False)
        system = system.replace("{functions}", docs)
        messages = [m.model_copy() for m in sample.messages]
        if messages and messages[0].role == "system":
            messages[0] = Message(role="system", content=f"{system}\n\n{messages[0].content}")
            return messages
        return [Message(role="system", content=system), *messages]

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        """Score one reply (Python call list or FC-mode JSON); a list is scored on its first item.

        ``values`` is ``{"accuracy": 0.0 | 1.0}``; ``details`` has ``valid``, ``error``,
        ``error_type`` (BFCL's label, empty on success), ``decoded`` (BFCL's
        ``[{name: {param: value}}]`` or None), ``category`` and, for (ir)relevance, ``outcome``.
        """
        if _is_multi_turn(sample):
            return self._score_multi_turn(sample, prediction, mode)
        text = prediction if isinstance(prediction, str) else (prediction[0] if prediction else "")
        category = _category(sample)
        decoded = decode(text, mode)
        details: dict[str, Any] = {
            "category": category,
            "decoded": _jsonable(decoded.calls) if decoded.ok else None,
        }
        if "relevance" in category:
            valid, error, error_type = self._relevance(sample, text, decoded, category, mode, details)
        elif not decoded.ok:
            valid, error, error_type = (
                False,
                [f"cannot decode: {decoded.error}"],
                "ast_decoder:decoder_failed",
            )
        elif not decoded.well_formed:
            valid, error, error_type = (
                False,
                ["not a list of calls"],
                "ast_decoder:decoder_wrong_output_format",
            )
        else:
            assert decoded.calls is not None
            answers = sample.metadata.get("ground_truth")
            if not isinstance(answers, list):
                answers = [{c.name: {k: [v] for k, v in c.arguments.items()}} for c in sample.target]
            result = ast_check(
                category, sample.tools, decoded.calls, answers, mode, underscore_to_dot=self.underscore_to_dot
            )
            valid, error, error_type = (
                result.valid,
                result.error,
                result.error_type if not result.valid else "",
            )
        details.update({"valid": valid, "error": _jsonable(error), "error_type": error_type})
        return SampleScore(id=sample.id, values={"accuracy": 1.0 if valid else 0.0}, details=details)

    def _score_multi_turn(self, sample: Sample, prediction: Prediction, mode: Mode) -> SampleScore:
        replies = [prediction] if isinstance(prediction, str) else list(prediction)
        result = mt.check_multi_turn(sample, replies, mode)
        details: dict[str, Any] = {
            "category": _category(sample),
            "valid": result.valid,
            "error": [result.error] if result.error else [],
            "error_type": result.error_type,
            "failed_turn": "none" if result.failed_turn is None else str(result.failed_turn),
            "turn_outcomes": result.turn_outcomes,
            "steps": result.steps,
        }
        if result.faults:
            details["faults"] = result.faults
            # The reports' per-fault-kind recovery chart reads this flag for the sample.
            details["recovered"] = all(f["recovered"] for f in result.faults)
        for i, outcome in enumerate(result.turn_outcomes):
            details[f"turn_{i}"] = outcome
        if result.differences:
            details["differences"] = result.differences
        if result.missing_results:
            details["missing_results"] = result.missing_results
        return SampleScore(id=sample.id, values={"accuracy": 1.0 if result.valid else 0.0}, details=details)

    def _relevance(
        self, sample: Sample, text: str, decoded: Any, category: str, mode: Mode, details: dict[str, Any]
    ) -> tuple[bool, list[str], str]:
        outcome = classify_output(text, decoded, [t.name for t in sample.tools])
        details["outcome"] = outcome
        has_call = decoded.ok and not is_empty_output(decoded.calls)
        if "irrelevance" in category:
            if has_call:
                return False, ["decoded a call where none was expected"], "irrelevance_error:decoder_success"
            if mode == "improved" and outcome == "malformed":
                return (
                    False,
                    ["an attempted call that does not parse is not an abstention"],
                    "irrelevance_error:malformed_call",
                )
            return True, [], ""
        if has_call:
            return True, [], ""
        return False, [f"no call decoded: {decoded.error or 'empty'}"], "relevance_error:decoder_failed"

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        """Accuracy per category (``accuracy:<category>``) and two overall figures, labelled:

        - ``overall_category_mean``: the unweighted mean of the category accuracies;
        - ``overall_sample_weighted``: correct samples / all samples.

        BFCL's own summaries mix the two (e.g. its non-live "simple" is an unweighted mean over
        languages while each category is sample-weighted), so neither reproduces a leaderboard
        column by itself. Scores without an accuracy value are left out.
        """
        by_category: dict[str, list[float]] = {}
        for s in scores:
            value = s.values.get("accuracy")
            if value is None:
                continue
            category = s.details.get("category")
            by_category.setdefault(category if isinstance(category, str) else "unknown", []).append(value)
        out = {f"accuracy:{c}": sum(v) / len(v) for c, v in sorted(by_category.items())}
        all_values = [v for vs in by_category.values() for v in vs]
        if all_values:
            out["overall_category_mean"] = sum(out.values()) / len(out)
            out["overall_sample_weighted"] = sum(all_values) / len(all_values)
        out.update(_fault_metrics(scores))
        return out


def _fault_metrics(scores: Sequence[SampleScore]) -> dict[str, float]:
    """``faults_injected``, ``fault_recovery`` (share of fired faults a retry got past) and per
    kind ``fault/<kind>/{injected,retried,recovered}``; empty when no fault fired."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for s in scores:
        for fault in s.details.get("faults") or []:
            by_kind.setdefault(str(fault.get("kind")), []).append(fault)
    out: dict[str, float] = {}
    for kind in sorted(by_kind):
        faults = by_kind[kind]
        out[f"fault/{kind}/injected"] = float(len(faults))
        for flag in ("retried", "recovered"):
            out[f"fault/{kind}/{flag}"] = sum(bool(f.get(flag)) for f in faults) / len(faults)
    every = [f for faults in by_kind.values() for f in faults]
    if every:
        out["faults_injected"] = float(len(every))
        out["fault_recovery"] = sum(bool(f.get("recovered")) for f in every) / len(every)
    return out

"""BFCL multi-turn: toolmend's episode split and compat checker against bfcl-eval's own code.

For every entry of the four multi-turn categories (or the first ``--per-category``), the script
makes replies of its own — the gold, the gold as FC-mode JSON, the gold spread over more steps,
four perturbed golds (values changed, calls dropped, repeated, reordered, moved to the turn before
or after, misspelt, swapped for another function, arguments dropped or added or turned into
strings), two with an odd reply put in (broken syntax, fences, ``[]``, prose, an empty object
argument, a nested call, a blocked name, a dotted class name, a positional argument, a string
that names a method, an object key with a quote, FC JSON with bad arguments …), one cut short,
one that keeps calling past the step limit and one that only talks — and compares:

1. ``BFCLBenchmark.score(..., "compat")`` with bfcl-eval's evaluator
   (``eval_runner._evaluate_single_multi_turn_entry``, model name ``model``, the prompting
   decoder for Python-style replies and the FC decoder for JSON ones) on ``(valid, error_type)``;
2. for complete Python-style episodes, toolmend's episode loop with bfcl-eval's own prompting
   inference loop (``BaseHandler.inference_multi_turn_prompting`` with the replies as the model):
   the same replies per turn, and the same tool results after every step.

It needs ``bfcl-eval==2026.3.23`` installed (``--no-deps`` is enough: the vendor-SDK modules the
evaluator imports are stubbed here, as they are never called) and prints the counts; exit 1 on any
difference. ``--out`` writes every reply set with the official verdict as JSON lines.

    .venv/bin/python benchmarks/bfcl_multi_turn_official.py --seed 1 [--per-category 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import io
import json
import random
import sys
import types
from collections import Counter
from typing import Any


def _stub(name: str, **attrs: Any) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module


class _Config:
    underscore_to_dot = False
    is_fc_model = False


# The evaluator's imports pull every vendor handler; none of them runs here.
_stub("bfcl_eval.constants.model_config", MODEL_CONFIG_MAPPING={"model": _Config()})
_stub("bfcl_eval.model_handler.parser.java_parser", parse_java_function_call=None)
_stub("bfcl_eval.model_handler.parser.js_parser", parse_javascript_function_call=None)
for _name, _attrs in (
    ("overrides", {"final": lambda f: f, "override": lambda f: f, "EnforceOverrides": object}),
    ("dotenv", {"load_dotenv": lambda *a, **k: None}),
):
    try:
        __import__(_name)
    except ImportError:
        _stub(_name, **_attrs)

import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils as official_utils  # noqa: E402
from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry  # noqa: E402
from bfcl_eval.model_handler.base_handler import BaseHandler  # noqa: E402
from bfcl_eval.model_handler.utils import (  # noqa: E402
    convert_to_function_call,
    default_decode_execute_prompting,
)

from toolmend import Message, Sample, ToolCall  # noqa: E402
from toolmend.benchmarks.bfcl import BFCLBenchmark  # noqa: E402
from toolmend.benchmarks.bfcl import _multi_turn as mt  # noqa: E402
from toolmend.benchmarks.bfcl._decode import render_fc, render_python  # noqa: E402

ODD = [
    "[cd(folder='x'", "", "[]", "I will call ls() now", "```\n[pwd()]\n```", "[ls(a=True), 1]",
    "[f(x={})]", "[cd(folder={})]", "'[pwd()]'", "[kill(pid=1)]", "[GorillaFileSystem.ls(a=True)]",
    "[cd(folder=pwd())]", "[ls(True)]", "[mean(numbers=[1, 2, +3])]",
    "[echo(content='see ls(x) and cd(y)', file_name='n.txt')]",
    "[touch(file_name={'it\\'s': 1, 'b': {'c': 1}})]", "[cd(folder={'a': {'b': 1}, 'c': {}})]",
    '[{"cd": "{\\"folder\\": \\"x\\"}"}]', '[{"cd": "{not json"}]', '[{"ls": "[1]"}]', '{"x": 1}',
    "[cd(**{'folder': 'a'})]",
]  # fmt: skip
"""Odd replies; the JSON ones go into FC-style reply sets (an FC model's results never hold
Python-syntax text that BFCL's FC decoder would read). Python builtins (``print(a=1)``) are left
out: BFCL's ``eval`` runs them and toolmend does not (a documented difference)."""


class _Prompting:
    def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> Any:
        return default_decode_execute_prompting(result)


class _FC:
    def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> Any:
        return convert_to_function_call(result)


def _clear() -> None:
    # BFCL keeps each entry's instances as module globals for the whole process.
    for key in [k for k in vars(official_utils) if k.endswith("_instance")]:
        del vars(official_utils)[key]


def _entry(sample: Sample) -> dict[str, Any]:
    return {
        "id": sample.id,
        "initial_config": copy.deepcopy(sample.metadata["initial_config"]),
        "involved_classes": list(sample.metadata["involved_classes"]),
        "question": copy.deepcopy(sample.metadata["turns"]),
    }


def _fc_item(reply: str) -> Any:
    try:
        value = json.loads(reply)
    except ValueError:
        return reply  # BFCL keeps an FC model's text answer as the string
    return value if isinstance(value, list) else reply


def official_verdict(sample: Sample, nested: list[list[str]], fc: bool) -> tuple[bool, str]:
    _clear()
    items: list[list[Any]] = [[_fc_item(r) for r in t] for t in nested] if fc else [list(t) for t in nested]
    with contextlib.redirect_stdout(io.StringIO()):
        result = _evaluate_single_multi_turn_entry(
            _FC() if fc else _Prompting(), sample.id, items, copy.deepcopy(sample.metadata["ground_truth"]),
            _entry(sample), "model", sample.metadata["category"],
        )  # fmt: skip
    return bool(result["valid"]), "" if result["valid"] else result["error"]["error_type"]


class _ScriptedHandler(BaseHandler):
    """BFCL's prompting inference loop with a script for the model."""

    def __init__(self, replies: list[str]) -> None:  # no super(): only the loop's hooks are used
        self.model_name_underline_replaced = "toolmend"
        self.replies, self.k, self.results = list(replies), 0, []

    def _pre_query_processing_prompting(self, test_entry: dict) -> dict:
        return {"message": []}

    def add_first_turn_message_prompting(self, data: dict, messages: list) -> dict:
        return data

    def _add_next_turn_user_message_prompting(self, data: dict, messages: list) -> dict:
        return data

    def _query_prompting(self, data: dict) -> tuple[str, float]:
        reply = self.replies[self.k] if self.k < len(self.replies) else "Done."
        self.k += 1
        return reply, 0.0

    def _parse_query_response_prompting(self, response: Any) -> dict:
        return {"model_responses": response, "input_token": 0, "output_token": 0}

    def _add_assistant_message_prompting(self, data: dict, response: dict) -> dict:
        return data

    def _add_execution_results_prompting(self, data: dict, results: list, response: dict) -> dict:
        self.results.append(list(results))
        return data

    def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> Any:
        return default_decode_execute_prompting(result)


def official_episode(sample: Sample, replies: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    _clear()
    handler = _ScriptedHandler(replies)
    entry = _entry(sample)
    entry["missed_function"] = {k: list(v) for k, v in sample.metadata.get("held_out", {}).items()}
    with contextlib.redirect_stdout(io.StringIO()):
        responses, _ = handler.inference_multi_turn_prompting(entry, False, True)
    extra = max(0, handler.k - len(replies))  # asked past the script: BFCL's loop never stops early
    while extra:
        responses[-1].pop()
        extra -= 1
        if not responses[-1]:
            responses.pop()
    return responses, handler.results


def toolmend_episode(
    bench: BFCLBenchmark, sample: Sample, replies: list[str]
) -> tuple[list[str], list[list[str]]]:
    script = iter(replies)
    last: list[Message] = []

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        last[:] = messages
        return next(script, "Done.")

    out = asyncio.run(mt.run_episode(sample, bench.prompt(sample), generate))
    results: list[list[str]] = []
    step: list[str] = []
    for m in last:
        if m.role == "tool":
            step.append(m.content)
        elif step:
            results.append(step)
            step = []
    if step:
        results.append(step)
    return out, results


class Replies:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def gold_calls(self, sample: Sample) -> list[list[ToolCall]]:
        classes = sample.metadata["involved_classes"]
        return [[mt._as_keywords(c, classes) for c in turn] for turn in sample.metadata["ground_truth"]]

    def mutate(self, call: ToolCall, sample: Sample) -> ToolCall:
        rng, args = self.rng, dict(call.arguments)
        name, kind = call.name, rng.randrange(6)
        if kind == 0 and args:
            key = rng.choice(list(args))
            v = args[key]
            if isinstance(v, bool):
                args[key] = not v
            elif isinstance(v, int | float):
                args[key] = v + 1
            elif isinstance(v, str):
                args[key] = v + "x" if rng.random() < 0.5 else v.upper()
            elif isinstance(v, list):
                args[key] = list(reversed(v)) if len(v) > 1 else v + v
            else:
                args[key] = "?"
        elif kind == 1 and args:
            args.pop(rng.choice(list(args)))
        elif kind == 2:
            args["bogus"] = 1
        elif kind == 3:
            name = name + "s"
        elif kind == 4:
            name = rng.choice([t.name for t in sample.tools])
        else:
            args = {k: (json.dumps(v) if not isinstance(v, str) else v) for k, v in args.items()}
        return ToolCall(name=name, arguments=args)

    def render(self, turns: list[list[ToolCall]], fc: bool = False, split: bool = False) -> list[str]:
        out: list[str] = []
        for calls in turns:
            steps = [calls] if calls else []
            if split and len(calls) > 1:
                cut = self.rng.randrange(1, len(calls))
                steps = [calls[:cut], calls[cut:]]
            out.extend(render_fc(s) if fc else render_python(s) for s in steps)
            out.append("Done.")
        return out

    def all(self, sample: Sample) -> list[tuple[str, list[str], bool]]:
        rng, gold = self.rng, self.gold_calls(sample)
        sets = [("gold", self.render(gold), False), ("gold_fc", self.render(gold, fc=True), True),
                ("gold_split", self.render(gold, split=True), False)]  # fmt: skip
        for _ in range(4):
            t = [list(x) for x in gold]
            for _ in range(rng.randint(1, 3)):
                i, op = rng.randrange(len(t)), rng.randrange(7)
                if op == 0 and t[i]:
                    t[i][rng.randrange(len(t[i]))] = self.mutate(rng.choice(t[i]), sample)
                elif op == 1 and t[i]:
                    t[i].pop(rng.randrange(len(t[i])))
                elif op == 2 and t[i]:
                    t[i].append(rng.choice(t[i]))
                elif op == 3 and len(t[i]) > 1:
                    rng.shuffle(t[i])
                elif op == 4 and i + 1 < len(t):
                    t[i], t[i + 1] = t[i] + t[i + 1], []
                elif op == 5 and i + 1 < len(t) and t[i]:
                    t[i + 1], t[i] = t[i][-1:] + t[i + 1], t[i][:-1]
                elif op == 6:
                    t[i] = [self.mutate(c, sample) for c in t[i]]
            fc = rng.random() < 0.3
            sets.append(("perturbed", self.render(t, fc=fc, split=rng.random() < 0.3), fc))
        for _ in range(2):
            r = self.render(gold)
            j, odd = rng.randrange(len(r)), rng.choice(ODD)
            fc = odd.startswith(("[{", "{"))
            if fc:
                r = self.render(gold, fc=True)
            if rng.random() < 0.5:
                r[j] = odd
            else:
                r.insert(j, odd)
            sets.append(("malformed", r, fc))
        r = self.render(gold)
        sets.append(("cut", r[: rng.randrange(len(r))], False))
        first = next((c for turn in gold for c in turn), None)
        if first is not None:
            r = self.render(gold)
            j = rng.randrange(len(r))
            loop = [render_python([first])] * rng.choice(
                [mt.STEP_LIMIT, mt.STEP_LIMIT + 1, mt.STEP_LIMIT + 2]
            )
            sets.append(("step_limit", r[:j] + loop + r[j:], False))
        sets.append(("text_only", ["I am not sure."] * len(gold), False))
        return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-category", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    bench = BFCLBenchmark()
    samples = bench.load(categories=list(mt.MULTI_TURN_CATEGORIES))
    make = Replies(random.Random(args.seed))
    n, labels, kinds = 0, Counter[str](), Counter[str]()
    verdict_diffs: list[Any] = []
    episode_diffs: list[Any] = []
    episodes = 0
    out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115
    for category in mt.MULTI_TURN_CATEGORIES:
        for sample in [s for s in samples if s.metadata["category"] == category][: args.per_category]:
            for kind, replies, fc in make.all(sample):
                turns, quit_ = mt.split_turns(replies, len(sample.metadata["ground_truth"]))
                nested = [[r for r, _ in t] for t in turns]
                ref = official_verdict(sample, nested, fc)
                score = bench.score(sample, replies, "compat")
                ours = (score.values["accuracy"] == 1.0, score.details["error_type"])
                n += 1
                labels[ref[1]] += 1
                kinds[kind] += 1
                if ref != ours:
                    verdict_diffs.append((sample.id, kind, ours, ref, replies[:6]))
                if out is not None:
                    record = {
                        "id": sample.id,
                        "kind": kind,
                        "replies": replies,
                        "valid": ref[0],
                        "error_type": ref[1],
                    }
                    out.write(json.dumps(record) + "\n")
                complete = len(nested) == len(sample.metadata["ground_truth"]) or quit_
                if fc or kind == "cut" or not complete:
                    continue
                episodes += 1
                responses, results = official_episode(sample, replies)
                said, seen = toolmend_episode(bench, sample, replies)
                said = said[: len(replies)]  # replies asked for past the script are not compared
                if (
                    responses != nested
                    or [r for t in responses for r in t] != said
                    or seen != results[: len(seen)]
                ):
                    episode_diffs.append((sample.id, kind, replies[:6]))
    if out is not None:
        out.close()
    print(f"seed {args.seed}: {n} reply sets, {len(verdict_diffs)} differences in (valid, error_type); "
          f"{episodes} episodes through BFCL's inference loop, {len(episode_diffs)} differences")  # fmt: skip
    print("kinds:", dict(kinds))
    print("official verdicts:", labels.most_common())
    for d in verdict_diffs[:10] + episode_diffs[:10]:
        print(d)
    return 1 if verdict_diffs or episode_diffs else 0


if __name__ == "__main__":
    sys.exit(main())

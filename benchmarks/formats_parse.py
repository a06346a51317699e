"""Speed of toolmend's call parsers on real gold outputs, against the bare readers, in one run.

    .venv/bin/python benchmarks/formats_parse.py [--repeat 3]

Inputs: the 1000 NesTools gold chains as Python reprs (how models often answer), the BFCL
possible answers (first acceptable values) as Python call strings, and the Tool-Reflection-Bench
ground truths (tagged text). Reference per input kind: the bare reader an official scorer uses —
``ast.literal_eval`` for NesTools, ``ast.parse`` for BFCL call strings, a ``<tool_call>`` regex +
``json.loads`` for the tagged text. toolmend does more (auto detection, findings, Refs, think
stripping, prose accounting), so the ratio is the price of that, measured in the same process.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from toolmend._schema import ToolCall
from toolmend._shared import shared_dir
from toolmend.formats import parse_calls, write_python_calls

_TAG = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def _jsonl(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _inputs() -> dict[str, list[str]]:
    data = shared_dir() / "data"
    nestools = [repr(r["call"]) for r in _jsonl(data / "nestools" / "test_data.jsonl")]
    bfcl: list[str] = []
    for cat in ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple"):
        for row in _jsonl(data / "bfcl" / "possible_answer" / f"BFCL_v4_{cat}.json"):
            calls = []
            for answer in row["ground_truth"]:
                [(name, params)] = answer.items()
                calls.append(
                    ToolCall(name=name, arguments={k: v[0] for k, v in params.items() if v and v[0] != ""})
                )
            bfcl.append(write_python_calls(calls))
    tags = [r["ground_truth"] for r in _jsonl(data / "tool-reflection-bench" / "test_qwen_sample.jsonl")]
    return {"nestools (python repr)": nestools, "bfcl (python calls)": bfcl, "reflection (tags)": tags}


def _reference(kind: str) -> Callable[[str], object]:
    if kind.startswith("nestools"):
        return ast.literal_eval
    if kind.startswith("bfcl"):
        return lambda s: ast.parse(s, mode="eval")
    return _naive_tags


def _naive_tags(text: str) -> object:
    out = []
    for m in _TAG.findall(text):
        try:
            out.append(json.loads(m))
        except ValueError:
            out.append(None)  # the naive reader loses this call (see docs/benchmarks/formats.md)
    return out


def _time(fn: Callable[[str], object], texts: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'input':<24}{'n':>6}{'reference ms':>14}{'toolmend ms':>13}{'ratio':>8}{'µs/output':>11}")
    for kind, texts in _inputs().items():
        ref = _time(_reference(kind), texts, args.repeat)
        ours = _time(parse_calls, texts, args.repeat)
        print(
            f"{kind:<24}{len(texts):>6}{ref * 1e3:>14.1f}{ours * 1e3:>13.1f}{ours / ref:>8.1f}"
            f"{ours / len(texts) * 1e6:>11.0f}"
        )


if __name__ == "__main__":
    main()

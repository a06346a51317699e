"""Tool-Reflection-Bench JSONL records → :class:`~toolmend.Sample`.

Each line is ``{"messages": [...], "ground_truth": str}`` (see the data README). The messages
are kept verbatim (the model sees exactly them); the tools are read back out of the system
prompt's ``<tools></tools>`` block (one JSON object per line, or one JSON array); the gold calls
are the ``<tool_call>`` blocks *after* the ``<reflect>`` part (some gold reflections quote a call,
which is not part of the answer); the raw ground truth stays in ``metadata["ground_truth"]``
for the official scorer.

>>> from toolmend._shared import shared_dir
>>> samples = load_reflection_bench(shared_dir() / "data/tool-reflection-bench/test_qwen_sample.jsonl")
>>> samples[0].target[0].name
'calculate_file_checksum'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolmend._errors import DatasetError, SpecError
from toolmend._jsontext import lines, loads
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._io import read_jsonl
from toolmend.benchmarks.reflection_bench._tags import split_reply
from toolmend.formats._tools import load_tool

__all__ = ["load_reflection_bench", "parse_record", "perturbation_family", "tools_from_system_prompt"]

_TOOLS_BLOCK = re.compile(r"<tools>(.*?)</tools>", re.DOTALL)
_REFLECT_BLOCK = re.compile(r"<reflect>.*?</reflect>", re.DOTALL | re.IGNORECASE)
_ROLES = {"system", "user", "assistant", "tool"}


def _tool_spec(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    # The JSON-array style lists parameters flat ({name: {type, description}}) with
    # "required" beside them; lift that into an object schema before the generic loader.
    params = spec.get("parameters")
    if not isinstance(params, Mapping):
        return spec
    flat = "properties" not in params and "type" not in params
    if flat and all(isinstance(v, Mapping) for v in params.values()):
        lifted = {
            "type": "object",
            "properties": dict(params),
            "required": list(spec.get("required") or []),
        }
        return {**{k: v for k, v in spec.items() if k != "required"}, "parameters": lifted}
    return spec


def tools_from_system_prompt(system: str) -> list[Tool]:
    """The tools declared in a system prompt's ``<tools>`` block; unreadable entries are skipped."""
    # The instructions mention "<tools></tools>" before the real block: take the last non-empty one.
    blocks = [b.strip() for b in _TOOLS_BLOCK.findall(system) if b.strip()]
    if not blocks:
        return []
    body = blocks[-1]
    specs: list[Any] = []
    try:
        parsed = loads(body)
        specs = parsed if isinstance(parsed, list) else [parsed]
    except ValueError:
        for _, line in lines(body):
            try:
                specs.append(loads(line))
            except ValueError:
                continue
    tools: list[Tool] = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            continue
        try:
            tools.append(load_tool(_tool_spec(spec)))
        except SpecError:
            continue
    return tools


def perturbation_family(last_tool_turn: str) -> str:
    """Which failure the record's last tool turn reports (the file has no label for it)."""
    if "INVALID_PARAMETERS" in last_tool_turn:
        return "argument_error"
    if '"redundant"' in last_tool_turn:
        return "redundant_call"
    if '"warning"' in last_tool_turn:
        return "call_order"
    return "other"


def parse_record(record: Any, *, path: str | Path | None = None, line: int | None = None) -> Sample:
    """One JSONL record → a Sample; a :class:`DatasetError` names what is wrong and where."""
    if not isinstance(record, Mapping):
        raise DatasetError("expected a JSON object per line", path=path, line=line)
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        raise DatasetError(
            "expected a non-empty list of chat messages", path=path, line=line, field="messages"
        )
    gold = record.get("ground_truth", record.get("groundtruth"))
    if isinstance(gold, Mapping):
        gold = gold.get("content", "")
    if not isinstance(gold, str):
        raise DatasetError(
            "expected the reference reply as a string", path=path, line=line, field="ground_truth"
        )
    converted: list[Message] = []
    for i, msg in enumerate(messages):
        if (
            not isinstance(msg, Mapping)
            or not isinstance(msg.get("role"), str)
            or msg.get("role") not in _ROLES
            or not isinstance(msg.get("content", ""), str)
        ):
            raise DatasetError(
                "expected {'role': system|user|assistant|tool, 'content': str}",
                path=path,
                line=line,
                field=f"messages[{i}]",
            )
        converted.append(Message(role=msg["role"], content=msg.get("content", "")))
    system = converted[0].content if converted[0].role == "system" else ""
    gold_parts = split_reply(gold)
    answer_calls = split_reply(_REFLECT_BLOCK.sub("", gold)).calls
    stem = Path(path).stem if path is not None else "record"
    return Sample(
        id=f"{stem}-{line if line is not None else 0}",
        messages=converted,
        tools=tools_from_system_prompt(system),
        target=[ToolCall(name=c["name"], arguments=c["arguments"]) for c in answer_calls],
        metadata={
            "ground_truth": gold,
            "gold_reflect": gold_parts.reflect,
            "gold_final": gold_parts.final,
            "family": perturbation_family(converted[-1].content),
            "source": str(path) if path is not None else None,
            "line": line,
        },
    )


def load_reflection_bench(path: str | Path) -> list[Sample]:
    """Read a Tool-Reflection-Bench JSONL file (Qwen ``<tool_call>`` format) into Samples."""
    p = Path(path)
    return [parse_record(record, path=p, line=n) for n, record in read_jsonl(p)]

"""Reading NesTools' ``test_data.jsonl`` + ``test_api_ids.jsonl`` into :class:`~toolmend.Sample`.

>>> from toolmend._shared import shared_dir
>>> samples = load_nestools(shared_dir() / "data/nestools")
>>> s = samples[0]
>>> s.metadata["depth"], [c.name for c in s.target]
(3, ['scan_isbn', 'locate_book', 'engage_ar_experience'])

Each sample holds the gold tools (``tools``; each tool's ``metadata["api_id"]`` is its integer id),
the task as a user message, and the gold chain as ``target``: a gold parameter whose value is
exactly one of the chain's ``API_call_n`` placeholders becomes a :class:`~toolmend.Ref` (also
inside lists), and each call's ``outputs`` are its placeholders with ``output_fields`` the tool's
return names. ``metadata`` carries ``test_id``, ``depth`` (as the official evaluator computes it),
``api_names`` / ``api_ids`` (parallel, in the file's ``api`` order) and ``field``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolmend._errors import DatasetError, SpecError
from toolmend._schema import Message, Ref, Sample, Tool, ToolCall, resolve
from toolmend.benchmarks._io import UniqueIds, check_flat_spec, read_jsonl
from toolmend.formats._tools import load_tool

__all__ = ["PLACEHOLDER_PREFIX", "gold_chain", "load_nestools", "official_depth", "to_official_output"]

PLACEHOLDER_PREFIX = "API_call"
"""The substring the official scorer looks for (``re.search``) to call a value nested."""

DATA_FILE = "test_data.jsonl"
IDS_FILE = "test_api_ids.jsonl"


def _need(
    record: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str, path: Path, line: int
) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        got = "missing" if key not in record else f"got {type(value).__name__}"
        raise DatasetError(f"expected {what}, {got}", path=path, line=line, field=key)
    return value


def official_depth(calls: list[dict[str, Any]]) -> int:
    """Nesting depth of a raw gold chain, computed as the official evaluator does.

    A call's depth is one more than the deepest earlier-or-same call one of whose placeholders
    occurs as a *substring* of ``str(value)`` of one of its parameters (so ``API_call_1`` also
    "occurs" in ``API_call_10``, and a call's own outputs count) — quirks kept on purpose because
    the depth filter selects samples by this number.

    >>> official_depth([{"parameters": {"a": 1}, "responses": ["API_call_0"]},
    ...                 {"parameters": {"b": "API_call_0"}, "responses": ["API_call_1"]}])
    2
    """
    depth = [1] * len(calls)
    seen: list[list[Any]] = []
    for idx, call in enumerate(calls):
        seen.append(list(call.get("responses") or []))
        producers: list[int] = []
        for value in (call.get("parameters") or {}).values():
            text = str(value)
            for i, outs in enumerate(seen):
                if any(str(o) in text for o in outs):
                    producers.append(i)
        if producers:
            depth[idx] = max(depth[i] + 1 for i in producers)
    return max(depth) if depth else 0


def _to_refs(value: Any, outputs: set[str]) -> Any:
    if isinstance(value, str) and value in outputs:
        return Ref(target=value)
    if isinstance(value, list):
        return [_to_refs(v, outputs) for v in value]
    return value


def gold_chain(sample: Sample) -> list[dict[str, Any]]:
    """The sample's gold calls in the official record shape (``api_name``, ``api_id``,
    ``parameters`` with placeholder strings, ``responses`` as a list), ids from the sample's
    ``api_names``/``api_ids`` (the last tool of a name wins, as officially)."""
    name_to_id = dict(zip(sample.metadata["api_names"], sample.metadata["api_ids"], strict=True))
    return [
        {
            "api_name": call.name,
            "api_id": name_to_id.get(call.name),
            "parameters": resolve(call.arguments, lambda ref: ref.target),
            "responses": list(call.outputs),
        }
        for call in sample.target
    ]


def _sample(record: dict[str, Any], api_ids: list[int], path: Path, line: int) -> Sample:
    test_id = _need(record, "test_id", int, "an integer test_id", path, line)
    apis = _need(record, "api", list, "a list of tool specs", path, line)
    task = _need(record, "task", str, "the task text", path, line)
    calls = _need(record, "call", list, "the gold call list", path, line)
    if len(api_ids) != len(apis):
        raise DatasetError(
            f"test {test_id}: {len(api_ids)} api_ids for {len(apis)} tools (they must be parallel)",
            path=path,
            line=line,
            field="api",
        )
    tools: list[Tool] = []
    for i, (spec, api_id) in enumerate(zip(apis, api_ids, strict=True)):
        check_flat_spec(spec, path=path, line=line, field=f"api[{i}]")
        try:
            tools.append(load_tool({**spec, "api_id": api_id}, "nestools"))
        except SpecError as exc:
            raise DatasetError(str(exc), path=path, line=line, field=f"api[{i}]") from exc
    names = [t.name for t in tools]
    for i, call in enumerate(calls):
        if (
            isinstance(call, dict)
            and call.get("responses") is not None
            and not isinstance(call["responses"], list)
        ):
            raise DatasetError(
                "expected a list of response placeholders", path=path, line=line, field=f"call[{i}].responses"
            )
    outputs = {
        o for c in calls if isinstance(c, dict) for o in (c.get("responses") or []) if isinstance(o, str)
    }
    target: list[ToolCall] = []
    for i, call in enumerate(calls):
        where = f"call[{i}]"
        if not isinstance(call, dict):
            raise DatasetError("expected a call object", path=path, line=line, field=where)
        name = call.get("api_name")
        if name not in names:
            raise DatasetError(
                f"api_name {name!r} is not one of the sample's tools {names}",
                path=path,
                line=line,
                field=where,
            )
        params = call.get("parameters")
        responses = call.get("responses", [])
        if not isinstance(params, dict):
            raise DatasetError("expected 'parameters' to be an object", path=path, line=line, field=where)
        if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
            raise DatasetError(
                "expected 'responses' to be a list of placeholder strings", path=path, line=line, field=where
            )
        tool = tools[names.index(name)]
        fields = list((tool.returns or {}).get("properties", {}))
        target.append(
            ToolCall(
                name=name,
                arguments={k: _to_refs(v, outputs) for k, v in params.items()},
                id=f"call_{i}",
                outputs=list(responses),
                output_fields=fields[: len(responses)],
            )
        )
    return Sample(
        id=str(test_id),
        messages=[Message(role="user", content=task)],
        tools=tools,
        target=target,
        metadata={
            "benchmark": "nestools",
            "test_id": test_id,
            "task": task,
            "depth": official_depth(calls),
            "api_names": names,
            "api_ids": list(api_ids),
            "field": record.get("field", ""),
        },
    )


def load_nestools(path: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Read the NesTools test set from a folder holding ``test_data.jsonl`` and
    ``test_api_ids.jsonl`` (or from the path of ``test_data.jsonl`` itself, the ids file beside it).

    The two files must agree line by line on ``test_id``; any disagreement or malformed record
    raises :class:`~toolmend.DatasetError` naming the file, line and field.
    """
    base = Path(path)
    data_path = base / DATA_FILE if base.is_dir() else base
    ids_path = data_path.parent / IDS_FILE
    ids: dict[int, list[int]] = {}
    for n, rec in read_jsonl(ids_path, objects=True):
        tid = _need(rec, "test_id", int, "an integer test_id", ids_path, n)
        api_ids = _need(rec, "api_ids", list, "a list of integer api ids", ids_path, n)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in api_ids):
            raise DatasetError(
                "expected every api id to be an integer", path=ids_path, line=n, field="api_ids"
            )
        ids[tid] = api_ids
    samples: list[Sample] = []
    unique = UniqueIds(data_path, "test_id")
    for n, rec in read_jsonl(data_path, objects=True):
        tid = _need(rec, "test_id", int, "an integer test_id", data_path, n)
        unique.add(tid, n)
        if tid not in ids:
            raise DatasetError(
                f"test_id {tid} has no line in {ids_path.name}", path=data_path, line=n, field="test_id"
            )
        samples.append(_sample(rec, ids[tid], data_path, n))
        if limit is not None and len(samples) >= limit:
            break
    return samples


def to_official_output(sample: Sample, calls: list[ToolCall] | None = None) -> str:
    """``calls`` (default: the gold chain) written as a model should answer: a JSON list of
    ``api_name`` / integer ``api_id`` / ``parameters`` / ``responses`` objects, ``responses``
    a dict from the tool's return names (schema order) to the call's placeholders.

    Fed back as the prediction, the gold chain written this way scores 100 on every metric.
    """
    name_to_id = dict(zip(sample.metadata["api_names"], sample.metadata["api_ids"], strict=True))
    out: list[dict[str, Any]] = []
    for call in sample.target if calls is None else calls:
        fields = list(call.output_fields)
        if len(fields) < len(call.outputs):
            tool = sample.tool(call.name)
            known = list((tool.returns or {}).get("properties", {})) if tool else []
            fields = known + [f"result_{i}" for i in range(len(known), len(call.outputs))]
        out.append(
            {
                "api_name": call.name,
                "api_id": name_to_id.get(call.name),
                "parameters": resolve(call.arguments, lambda ref: ref.target),
                "responses": dict(zip(fields, call.outputs, strict=False)),
            }
        )
    return json.dumps(out, ensure_ascii=False)

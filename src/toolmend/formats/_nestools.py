"""NesTools call chains: ``[{"api_name", "api_id", "parameters", "responses"}, ...]``.

A later call uses an earlier call's output by writing its placeholder (``"API_call_2"``) as a
parameter value — also inside lists (and dicts). Exactly-matching values become :class:`~toolmend._schema.Ref`, never
strings. ``responses`` names the placeholders a call binds: a dict ``{return_name:
placeholder}`` in model predictions (→ ``ToolCall.outputs`` and ``output_fields``), a list of
placeholders in the gold data (→ ``outputs`` only). ``api_id`` and any other extra key go to
``ParseResult.extras`` for that call.

NesTools predictions are often Python reprs (single quotes, ``True``); that is valid in this
format — the official evaluator reads them with ``ast.literal_eval`` — and is not flagged.

>>> r = parse_nestools_calls('''[{"api_name": "scan_isbn", "api_id": 9031, "parameters": {"isbn": "978"},
...   "responses": {"book_details": "API_call_0"}},
...  {"api_name": "locate_book", "api_id": 10894, "parameters": {"book_info": "API_call_0"},
...   "responses": {"location_desc": "API_call_1"}}]''')
>>> r.calls[1].arguments, r.calls[0].outputs, r.calls[0].output_fields, r.extras[1]
({'book_info': Ref(target='API_call_0')}, ['API_call_0'], ['book_details'], {'api_id': 10894})
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._schema import Ref, ToolCall, resolve
from toolmend.formats._jsonfmt import scan_json_values
from toolmend.formats._result import ParseResult

__all__ = [
    "PLACEHOLDER",
    "calls_from_nestools",
    "looks_like_nestools",
    "parse_nestools_calls",
    "write_nestools_calls",
]

PLACEHOLDER = re.compile(r"API_call_\d+")
_KNOWN = ("api_name", "parameters", "responses")


def _is_item(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("api_name"), str)


def looks_like_nestools(value: Any) -> bool:
    """True for a NesTools call dict or a non-empty list of them."""
    if isinstance(value, list):
        return bool(value) and all(_is_item(v) for v in value)
    return _is_item(value)


def _refs(value: Any) -> Any:
    if isinstance(value, str) and PLACEHOLDER.fullmatch(value):
        return Ref(target=value)
    if isinstance(value, list):
        return [_refs(v) for v in value]
    if isinstance(value, dict):
        return {k: _refs(v) for k, v in value.items()}
    return value


def _placeholder(ref: Ref) -> str:
    """A reference as NesTools writes it: the placeholder's name."""
    return ref.target


def calls_from_nestools(chain: Any, result: ParseResult | None = None) -> ParseResult:
    """Convert an already-decoded chain (a list of call dicts) into calls; never raises.

    Use it for the gold ``call`` field of ``test_data.jsonl`` as well as for predictions.
    """
    result = result if result is not None else ParseResult(format="nestools")
    result.format = "nestools"
    items = chain if isinstance(chain, list) else [chain]
    for i, item in enumerate(items):
        where = f"call[{i}]"
        if not _is_item(item):
            result.flag("invalid_format", f"{where}: expected an object with a string 'api_name'", raw=item)
            continue
        params = item.get("parameters", {})
        problems: list[str] = []
        if not isinstance(params, dict):
            problems.append(f"'parameters' must be an object, got {type(params).__name__}")
            params = {}
        outputs, fields = _responses(item.get("responses"), problems)
        extras = {k: v for k, v in item.items() if k not in _KNOWN}
        idx = result.add_call(
            where,
            extras,
            name=item["api_name"],
            arguments={str(k): _refs(v) for k, v in params.items()},
            outputs=outputs,
            output_fields=fields,
        )
        for p in problems:
            result.flag("invalid_format", f"{where}: {p}", call=idx, raw=item)
    return result


def _responses(raw: Any, problems: list[str]) -> tuple[list[str], list[str]]:
    if raw is None:
        return [], []
    if isinstance(raw, dict):
        if all(isinstance(v, str) for v in raw.values()):
            return list(raw.values()), [str(k) for k in raw]
    elif isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return list(raw), []
    problems.append("'responses' must map return names to placeholder strings (or list them)")
    return [], []


def parse_nestools_calls(text: str) -> ParseResult:
    """Read a NesTools chain from model text (JSON or a Python literal, bare or fenced).

    Never raises; a chain that needed repair beyond Python literal syntax, prose around it, or a
    chain that cannot be read are findings.
    """
    result = ParseResult(format="none")
    scan = scan_json_values(text, looks_like_nestools, lambda chunk: "api_name" in chunk)
    for value, how, chunk in scan.values:
        first = len(result.calls)
        calls_from_nestools(value, result)
        if how == "repaired":
            result.flag(
                "invalid_format",
                "the chain was neither JSON nor a Python literal; recovered by repair",
                call=first if len(result.calls) > first else None,
                raw=chunk,
            )
    for chunk, reason in scan.broken:
        result.flag("invalid_format", reason, raw=chunk)
    result.format = "nestools" if result.calls else "none"
    result.text = scan.prose
    if result.calls and scan.prose:
        result.flag("redundant_information", "prose around the chain", text=scan.prose)
    return result


def write_nestools_calls(
    calls: Sequence[ToolCall],
    *,
    api_ids: Mapping[str, int] | Sequence[int | None] | None = None,
    responses: str = "auto",
    indent: int | None = None,
) -> str:
    """Write a NesTools chain as JSON.

    ``api_ids`` gives each call's ``api_id`` (by tool name, or by position); the official scorer
    aligns on it. ``responses="dict"`` writes ``{field: placeholder}`` (the prediction format the
    scorer expects; needs ``output_fields``), ``"list"`` the gold format, ``"auto"`` a dict when
    the fields are known and a list otherwise.

    >>> write_nestools_calls([ToolCall(name="f", arguments={"x": Ref(target="API_call_0")},
    ...     outputs=["API_call_1"], output_fields=["y"])], api_ids={"f": 7})
    '[{"api_name": "f", "api_id": 7, "parameters": {"x": "API_call_0"}, "responses": {"y": "API_call_1"}}]'
    """
    items: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        item: dict[str, Any] = {"api_name": call.name}
        api_id = _api_id(api_ids, call.name, i)
        if api_id is not None:
            item["api_id"] = api_id
        item["parameters"] = resolve(call.arguments, _placeholder)
        named = len(call.output_fields) == len(call.outputs)
        if responses == "dict" or (responses == "auto" and named and call.output_fields):
            item["responses"] = dict(zip(call.output_fields, call.outputs, strict=False))
        else:
            item["responses"] = list(call.outputs)
        items.append(item)
    return json.dumps(items, ensure_ascii=False, indent=indent)


def _api_id(api_ids: Mapping[str, int] | Sequence[int | None] | None, name: str, index: int) -> int | None:
    if api_ids is None:
        return None
    if isinstance(api_ids, Mapping):
        return api_ids.get(name)
    return api_ids[index] if index < len(api_ids) else None

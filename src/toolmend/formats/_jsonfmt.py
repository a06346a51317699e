"""JSON actions: ``{"name": ..., "args"|"arguments"|"parameters": {...}}``, one or a list.

This is the format of CriticTool (``{"error"?, "thought"?, "name", "args"}``, with
``{"name": "FinishAction", "args": "<answer>"}`` for a final answer), of Llama-style JSON call
arrays (``[{"name", "parameters"}]``) and of the body of a Hermes ``<tool_call>`` block. The
OpenAI shapes ``{"type": "function", "function": {"name", "arguments": "<json>"}}`` and an
assistant message ``{"tool_calls": [...]}`` are recognised too (format ``"openai"``).

Reading is tolerant (see :mod:`toolmend.formats._lenient`) but honest: ```` ``` ```` fences are
accepted silently, prose around the JSON is a ``redundant_information`` finding, and anything
that had to be repaired (single quotes, trailing commas, arguments given as a JSON string …) is
an ``invalid_format`` finding although the call is returned.

>>> r = parse_json_calls('{"name": "Email.send", "args": {"to": "a@b.c"}, "thought": "mail it"}')
>>> r.calls[0].name, r.calls[0].arguments, r.extras[0]
('Email.send', {'to': 'a@b.c'}, {'thought': 'mail it'})
>>> parse_json_calls('{"name": "FinishAction", "args": "It is 18 degrees."}').final
'It is 18 degrees.'
>>> write_json_calls([ToolCall(name="f", arguments={"x": 1})], key="args")
'{"name": "f", "args": {"x": 1}}'
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolmend._schema import ToolCall, resolve
from toolmend.formats._lenient import LoadMethod, find_spans, load_lenient, split_fences
from toolmend.formats._result import ParseResult

__all__ = [
    "ARGUMENT_KEYS",
    "FINISH_ACTION",
    "action_to_result",
    "call_to_action",
    "decode_arguments",
    "looks_like_actions",
    "mentions_call",
    "near_action",
    "openai_item_to_result",
    "scan_json_values",
    "parse_json_calls",
    "write_json_calls",
]

FINISH_ACTION = "FinishAction"
NAME_KEYS = ("name", "tool_name", "tool")
ARGUMENT_KEYS = ("arguments", "args", "parameters")
_JSON_LANGS = {"", "json", "jsonc", "json5", "javascript", "js", "python", "py", "tool_call", "tool_code"}


def _is_action(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict) or isinstance(obj.get("tool_calls"), list):
        return True
    return any(isinstance(obj.get(k), str) for k in NAME_KEYS)


def near_action(value: Any) -> str | None:
    """Why ``value`` is almost a call object (a name key and an arguments key, but a non-string
    name), or None."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if (
            isinstance(item, dict)
            and not _is_action(item)
            and any(k in item for k in NAME_KEYS)
            and any(k in item for k in ARGUMENT_KEYS)
        ):
            return "a call object whose name is not a string"
    return None


def looks_like_actions(value: Any) -> bool:
    """True when ``value`` is an action dict or a non-empty list of them."""
    if isinstance(value, list):
        return bool(value) and all(_is_action(v) for v in value)
    return _is_action(value)


def decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a dict, and what was wrong with ``raw`` (None when it was a proper object).

    A string is decoded leniently (OpenAI sends JSON strings; CriticTool histories sometimes
    hold a stringified Python dict). ``None`` and ``""`` mean no arguments.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict):
        return {str(k): v for k, v in raw.items()}, None
    if isinstance(raw, str):
        try:
            value, how = load_lenient(raw)
        except ValueError:
            return {}, "arguments are not valid JSON; the call is kept with no arguments"
        if isinstance(value, dict):
            problem = None if how == "json" else f"arguments string {_HOW[how]}; recovered"
            return {str(k): v for k, v in value.items()}, problem
    return {}, f"arguments must be an object, got {type(raw).__name__}; the call is kept with no arguments"


def action_to_result(obj: Any, result: ParseResult, *, where: str = "action") -> None:
    """Add the call(s) described by one decoded JSON value to ``result``."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            action_to_result(item, result, where=f"{where}[{i}]")
        return
    if not isinstance(obj, dict):
        result.flag("invalid_format", f"{where}: expected a call object, got {type(obj).__name__}", raw=obj)
        return
    if isinstance(obj.get("tool_calls"), list):
        # An OpenAI assistant message serialised as JSON.
        for i, item in enumerate(obj["tool_calls"]):
            action_to_result(item, result, where=f"{where}.tool_calls[{i}]")
        if isinstance(obj.get("content"), str) and obj["content"].strip():
            result.text = (result.text + "\n" + obj["content"]).strip()
        result.format = "openai"
        return
    fn = obj.get("function")
    if isinstance(fn, dict):
        openai_item_to_result(obj, result, where=where)
        return
    name_key = next((k for k in NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name_key is None:
        result.flag("invalid_format", f"{where}: no tool name (expected a string under 'name')", raw=obj)
        return
    name = obj[name_key]
    arg_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    raw_args = obj.get(arg_key) if arg_key else None
    extras = {k: v for k, v in obj.items() if k not in (name_key, arg_key)}
    if name == FINISH_ACTION:
        result.final = raw_args if isinstance(raw_args, str) else json.dumps(raw_args, ensure_ascii=False)
        result.final_extras.update(extras)
        return
    arguments, problem = decode_arguments(raw_args)
    if problem is None and isinstance(raw_args, str) and raw_args.strip():
        problem = "arguments were a JSON string, not an object; decoded"
    call_id = extras.pop("id", None)
    idx = result.add_call(
        where, extras, name=name, arguments=arguments, id=call_id if isinstance(call_id, str) else None
    )
    if problem:
        result.flag("invalid_format", f"{where}: {problem}", call=idx, raw=raw_args)


def openai_item_to_result(obj: Mapping[str, Any], result: ParseResult, *, where: str = "tool_call") -> None:
    """Add one OpenAI ``tool_calls`` item (``{"id", "type", "function": {"name", "arguments"}}``)."""
    fn = obj.get("function")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        result.flag("invalid_format", f"{where}: no function name", raw=dict(obj))
        return
    raw_args = fn.get("arguments")
    arguments, problem = decode_arguments(raw_args)
    call_id = obj.get("id")
    extras = {k: v for k, v in obj.items() if k not in ("function", "id", "type")}
    extras.update({k: v for k, v in fn.items() if k not in ("name", "arguments")})
    idx = result.add_call(
        where, extras, name=fn["name"], arguments=arguments, id=call_id if isinstance(call_id, str) else None
    )
    if problem:
        result.flag("invalid_format", f"{where}: {problem}", call=idx, raw=raw_args)
    result.format = "openai"


@dataclass
class Scan:
    """What :func:`scan_json_values` found: accepted values in order, broken call-like chunks
    (``(chunk, reason)``) and the prose left over."""

    values: list[tuple[Any, LoadMethod, str]] = field(default_factory=list)
    broken: list[tuple[str, str]] = field(default_factory=list)
    prose: str = ""


def scan_json_values(
    text: str,
    accept: Callable[[Any], bool],
    hint: Callable[[str], bool],
    near: Callable[[Any], str | None] | None = None,
) -> Scan:
    """Find the JSON-ish values in ``text`` (bare or fenced) that ``accept`` takes.

    A bracketed chunk that does not parse, or that is cut off, is reported as broken when
    ``hint(chunk)`` says it was meant as a call; otherwise it stays in the prose. An unclosed
    opener followed by a complete accepted value is taken as a stray bracket in prose. ``near``
    may name what is wrong with a value that parsed but was not accepted (a call object with a
    non-string name); such values are reported as broken instead of staying in the prose.
    """
    scan = Scan()
    fences, outside = split_fences(text)
    prose = [body for lang, body in fences if lang not in _JSON_LANGS]
    # Keyed by the chunk's text: a model looping on one block repeats the same chunk thousands
    # of times, and each distinct chunk is read and judged once.
    verdicts: dict[str, tuple[tuple[Any, LoadMethod] | None, bool, str | None]] = {}
    handed_out: set[str] = set()

    def judge(chunk: str) -> tuple[tuple[Any, LoadMethod] | None, bool, str | None]:
        """``(loaded value and method, accepted, why it is almost a call)`` of ``chunk``."""
        if chunk not in verdicts:
            try:
                loaded: tuple[Any, LoadMethod] | None = load_lenient(chunk)
            except ValueError:
                loaded = None
            ok = loaded is not None and accept(loaded[0])
            why = near(loaded[0]) if loaded is not None and not ok and near is not None else None
            verdicts[chunk] = (loaded, ok, why)
        return verdicts[chunk]

    def take(chunk: str, loaded: tuple[Any, LoadMethod]) -> None:
        # A repeated chunk's value is a copy: each call gets arguments of its own.
        value = copy.deepcopy(loaded[0]) if chunk in handed_out else loaded[0]
        handed_out.add(chunk)
        scan.values.append((value, loaded[1], chunk))

    for src in [*(body for lang, body in fences if lang in _JSON_LANGS), outside]:
        spans = find_spans(src)
        pos = 0
        in_cut_list = False

        for k, span in enumerate(spans):
            if span.start < pos:
                continue
            chunk = src[span.start : span.end]
            if span.closed:
                loaded, ok, why = judge(chunk)
                if loaded is not None and ok:
                    take(chunk, loaded)
                elif loaded is None and hint(chunk):
                    scan.broken.append((chunk, "a call-like JSON block could not be parsed"))
                elif why:
                    scan.broken.append((chunk, why))
                else:
                    continue
            else:
                if not hint(chunk):
                    continue
                if in_cut_list:
                    # The cut-off tail of a list already flagged: consumed, not prose.
                    prose.append(src[pos : span.start])
                    pos = span.end
                    continue
                taken = [s for s in spans[k + 1 :] if s.closed and judge(src[s.start : s.end])[1]]
                if taken:
                    # Complete values inside a cut-off list are kept (and the cut flagged); so are
                    # values under a key of a cut-off object ({"tool_calls": [...] with no final
                    # brace). An opener followed by prose before the value is a stray bracket.
                    between = src[span.start + 1 : taken[0].start]
                    if not between.strip(" \t\r\n,"):
                        scan.broken.append(
                            (chunk, "the output is cut off (unclosed list); complete calls kept")
                        )
                        in_cut_list = True
                    elif _KEY_BEFORE_VALUE.search(between):
                        scan.broken.append(
                            (chunk, "the output is cut off (unclosed object); complete calls kept")
                        )
                    continue
                scan.broken.append((chunk, "the output is cut off inside a call (unclosed bracket)"))
            prose.append(src[pos : span.start])
            pos = span.end
        prose.append(src[pos:])
    # Separators left between the items of a cut-off list are not prose.
    scan.prose = "\n".join(p.strip() for p in prose if p.strip(" \t\r\n,[]"))
    return scan


def parse_json_calls(text: str) -> ParseResult:
    """Read JSON action(s) from ``text``: bare or fenced, one object, a list, or one per line.

    Never raises. ``format`` is ``"json"`` (``"openai"`` for OpenAI-shaped objects, ``"none"``
    when no call was found).
    """
    result = ParseResult(format="none")
    scan = scan_json_values(text, looks_like_actions, mentions_call, near_action)
    for value, how, chunk in scan.values:
        first = len(result.calls)
        action_to_result(value, result)
        if how != "json":
            result.flag(
                "invalid_format",
                f"the call JSON was not valid JSON ({_HOW[how]}); recovered",
                call=first if len(result.calls) > first else None,
                raw=chunk,
                method=how,
            )
    for chunk, reason in scan.broken:
        result.flag("invalid_format", reason, raw=chunk)
    if result.format == "none" and (result.calls or result.final is not None):
        result.format = "json"
    result.text = f"{result.text}\n{scan.prose}".strip() if result.text else scan.prose
    if (result.calls or result.final is not None) and scan.prose:
        result.flag("redundant_information", "prose around the call(s)", text=scan.prose)
    return result


# The text of an unclosed object just before a complete value: `... "tool_calls": ` .
_KEY_BEFORE_VALUE = re.compile(r'"\s*:\s*$')

_HOW = {
    "python": "used Python literal syntax",
    "repaired": "needed repair (quotes, trailing commas, literals or comments)",
}


def mentions_call(chunk: str) -> bool:
    return any(f'"{k}"' in chunk or f"'{k}'" in chunk for k in (*NAME_KEYS, "api_name", "function"))


def _plain(value: Any) -> Any:
    return resolve(value, lambda ref: ref.model_dump())


def call_to_action(
    call: ToolCall, key: str = "arguments", extras: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One call as a JSON action dict (``extras`` first, as CriticTool writes ``error``/``thought``)."""
    action: dict[str, Any] = dict(extras or {})
    action["name"] = call.name
    action[key] = _plain(call.arguments)
    return action


def write_json_calls(
    calls: Sequence[ToolCall],
    *,
    key: Literal["arguments", "args", "parameters"] = "arguments",
    as_list: bool | None = None,
    extras: Sequence[Mapping[str, Any]] | None = None,
    final: str | None = None,
    indent: int | None = None,
    fence: bool = False,
) -> str:
    """Write calls as JSON actions.

    One call is written as an object and several as a list, unless ``as_list`` says otherwise.
    ``final`` appends a CriticTool ``FinishAction`` whose ``args`` is that string; ``extras``
    (one mapping per call) adds keys such as ``thought``. ``fence`` wraps the JSON in a
    ```` ```json ```` block.
    """
    actions: list[dict[str, Any]] = [
        call_to_action(c, key, extras[i] if extras and i < len(extras) else None) for i, c in enumerate(calls)
    ]
    if final is not None:
        actions.append({"name": FINISH_ACTION, key: final})
    single = len(actions) == 1 if as_list is None else not as_list
    payload: Any = actions[0] if single and actions else actions
    body = json.dumps(payload, ensure_ascii=False, indent=indent)
    return f"```json\n{body}\n```" if fence else body

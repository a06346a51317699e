"""Writing CriticTool records: the system prompt with its tool list, the history, the gold action.

The official evaluator reads three things from a record, so they are what this module gets
exactly right (the wording around them is toolmend's own):

- the tool list sits in the system prompt between its first ``[`` and ``"\\nTo use a tool"``, each
  tool written with ``required_parameters`` / ``optional_parameters`` lists of ``{name, type, ...}``;
- the prompt contains ``"Remember: only generate ONE step each time."``, before which the runner
  inserts the mode instruction;
- parameter types are spelled so that the official argument scorer checks values with the right
  Python type (``integer`` → int, ``float`` → float, ``dict`` → dict, ``any`` → anything): JSON
  Schema's ``number`` and ``object`` would be read as strings there, and a correct float or object
  would score 0. Gold values of ``float`` parameters are written as floats for the same reason.

>>> tool = Tool(name="f", parameters={"type": "object", "properties": {"x": {"type": "number"}},
...     "required": ["x"]})
>>> tool_entry(tool)["required_parameters"]
[{'name': 'x', 'type': 'float'}]
>>> action_args({"x": 2}, tool)
{'x': 2.0}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolmend.benchmarks.critictool.prompts import ANCHOR
from toolmend.errors import ConfigError
from toolmend.schema import Tool

__all__ = ["SYSTEM_TEMPLATE", "action_args", "action_text", "system_prompt", "tool_entry"]

SYSTEM_TEMPLATE = (
    "You are an assistant that solves the user's request step by step with external tools. "
    "The tools you may call are described by this JSON list:\n{tools}\n"
    "To use a tool, answer with one JSON object and nothing else (no comments):\n"
    '{{"name": "<tool name>", "args": {{<argument name>: <value>}}}}\n'
    "When no tool is needed any more, or you already have the answer, reply instead with:\n"
    '{{"name": "FinishAction", "args": "<your answer to the user>"}}\n' + ANCHOR + "."
)
"""The system prompt; ``{tools}`` is replaced by the JSON tool list (replaceable by the caller)."""

# JSON Schema type → the type name the official scorer maps to the matching Python type.
_CRITIC_TYPES: dict[str, str] = {
    "string": "string",
    "integer": "integer",
    "number": "float",
    "boolean": "boolean",
    "array": "array",
    "object": "dict",
}


def _critic_type(schema: dict[str, Any]) -> str:
    original = schema.get("x-original-type")
    if original in ("float", "dict", "any"):
        return str(original)
    kind = schema.get("type")
    return _CRITIC_TYPES.get(kind, "any") if isinstance(kind, str) else "any"


def _param(name: str, schema: Any) -> dict[str, Any]:
    body = schema if isinstance(schema, dict) else {}
    entry: dict[str, Any] = {"name": name, "type": _critic_type(body)}
    # Keep every other constraint (enum, pattern, items, bounds): the critic checks them.
    entry |= {k: v for k, v in body.items() if k not in ("type", "x-original-type", "name")}
    return entry


def tool_entry(tool: Tool) -> dict[str, Any]:
    """One tool in CriticTool's dialect (read back by ``load_tools(..., dialect="critictool")``)."""
    required = set(tool.required)
    entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
    entry["required_parameters"] = [_param(k, s) for k, s in tool.properties.items() if k in required]
    entry["optional_parameters"] = [_param(k, s) for k, s in tool.properties.items() if k not in required]
    if tool.returns:
        entry["return_data"] = tool.returns
    return entry


def system_prompt(tools: Sequence[Tool], template: str = SYSTEM_TEMPLATE) -> str:
    """The system message holding ``tools`` as a JSON list (template must keep the list first)."""
    listing = json.dumps([tool_entry(t) for t in tools], ensure_ascii=False, sort_keys=True)
    head, sep, tail = template.partition("{tools}")
    if not sep:
        raise ConfigError("the system template needs a {tools} placeholder")
    unescape = lambda text: text.replace("{{", "{").replace("}}", "}")  # noqa: E731
    return unescape(head) + listing + unescape(tail)


def action_args(args: dict[str, Any], tool: Tool | None) -> dict[str, Any]:
    """``args`` with integers of ``float`` parameters written as floats (see the module docstring)."""
    if tool is None:
        return dict(args)
    out: dict[str, Any] = {}
    for key, value in args.items():
        schema = tool.properties.get(key)
        is_float = isinstance(schema, dict) and _critic_type(schema) == "float"
        if is_float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out[key] = value
    return out


def action_text(name: str, args: Any, thought: str | None = None) -> str:
    """An assistant turn as the official format writes it: ``{"thought"?, "name", "args"}``."""
    body: dict[str, Any] = {}
    if thought is not None:
        body["thought"] = thought
    body |= {"name": name, "args": args}
    return json.dumps(body, ensure_ascii=False)

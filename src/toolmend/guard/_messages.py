"""The words of the guard: targeted re-ask texts per finding code, and the message shapes that
keep a provider's history valid.

A re-ask names the call (index and tool), the parameter path, what was expected (type, enum,
range) and the did-you-mean, quotes only the failing tool's schema excerpt, and says that
nothing was executed. For native calls every ``tool_calls[i].id`` of the assistant turn gets a
``tool`` message with that id (the pairing invariant): the bad calls get their problems, the
valid siblings say whether they are kept or held.

>>> from toolmend import Finding, Tool
>>> tool = Tool(name="get_weather", parameters={"type": "object", "properties": {
...     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]})
>>> f = Finding(code="invalid_value", message="...", call=0, path="unit")
>>> print(finding_line(f, tool))
- 'unit' must be one of ["celsius", "fahrenheit"].
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._schema import Finding, Tool

__all__ = ["call_problem_text", "finding_line", "schema_at", "schema_excerpt", "turn_problem_text"]

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
NOTHING_RAN = "Nothing was executed."


def _loc(finding: Finding) -> list[str | int]:
    loc = finding.data.get("loc")
    if isinstance(loc, list) and all(isinstance(p, str | int) for p in loc):
        return list(loc)
    return [
        m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _PATH_PART.finditer(finding.path)
    ]


def schema_at(tool: Tool | None, loc: Sequence[str | int]) -> Mapping[str, Any]:
    """The JSON schema of the parameter at ``loc`` in ``tool`` (``{}`` where it has none)."""
    schema: Any = tool.parameters if tool is not None else {}
    for part in loc:
        if not isinstance(schema, Mapping):
            return {}
        if isinstance(part, int):
            schema = schema.get("items", {})
        else:
            props = schema.get("properties")
            schema = props.get(part, {}) if isinstance(props, Mapping) else {}
    return schema if isinstance(schema, Mapping) else {}


def _dump(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected(schema: Mapping[str, Any]) -> str:
    parts = []
    t = schema.get("type")
    if isinstance(t, str | list):
        parts.append(t if isinstance(t, str) else " or ".join(map(str, t)))
    if isinstance(schema.get("enum"), list):
        parts.append(f"one of {_dump(schema['enum'])}")
    bounds = [
        f"{sym} {schema[k]}"
        for k, sym in (
            ("minimum", ">="),
            ("maximum", "<="),
            ("exclusiveMinimum", ">"),
            ("exclusiveMaximum", "<"),
        )
        if isinstance(schema.get(k), int | float)
    ]
    parts.extend(bounds)
    if isinstance(schema.get("pattern"), str):
        parts.append(f"matching {schema['pattern']!r}")
    if isinstance(schema.get("format"), str):
        parts.append(f"format {schema['format']}")
    return ", ".join(parts)


def _hint(finding: Finding) -> str:
    hint = finding.suggestion or ""
    return f" {hint}" if hint and hint not in finding.message else ""


def finding_line(finding: Finding, tool: Tool | None, tools: Sequence[str] = ()) -> str:
    """One bullet for one finding, in toolmend's own words for its code."""
    loc = _loc(finding)
    path = finding.path or ".".join(str(p) for p in loc)
    schema = schema_at(tool, loc)
    expected = _expected(schema)
    code = finding.code
    if code == "wrong_tool_name" and finding.data.get("rule") == "reask_switch":
        return f"- {finding.message}. {finding.suggestion}"
    if code == "wrong_tool_name":
        near = finding.data.get("closest") or []
        hint = f" Did you mean {near[0]!r}?" if near else ""
        offered = ", ".join(tools[:12]) + (" ..." if len(tools) > 12 else "")
        return f"- {finding.message}.{hint} The tools on offer are: {offered}."
    if code == "missing_required":
        desc = schema.get("description")
        what = f" ({expected})" if expected else ""
        more = f": {desc}" if isinstance(desc, str) and desc else ""
        return f"- The required parameter '{path}'{what} is missing{more}. Take its value from the request."
    if code == "invalid_type":
        return f"- '{path}' must be {expected or 'of another type'}; {finding.message.split(', got ')[-1] if ', got ' in finding.message else finding.message}.{_hint(finding)}"
    if code == "invalid_value":
        if finding.data.get("ungrounded"):
            return f"- {finding.message}. {finding.suggestion}"
        if isinstance(schema.get("enum"), list):
            return f"- '{path}' must be one of {_dump(schema['enum'])}."
        return f"- {finding.message}. Expected: {expected or 'a value the schema allows'}."
    if code == "empty_value":
        return f"- '{path}' is empty or null; give the real value from the request{', ' + expected if expected else ''}."
    if code == "redundant_parameter":
        alias = finding.data.get("alias")
        if alias:
            return f"- '{path}' is not a parameter of this tool; did you mean '{alias}'?"
        names = ", ".join(tool.properties) if tool is not None else ""
        return f"- '{path}' is not a parameter of this tool (it takes: {names or 'no parameters'}). Leave it out."
    if code == "positional_argument":
        return f"- {finding.message}. Pass every value by its parameter name."
    if code == "duplicate_call" and finding.data.get("rule") == "loop":
        return f"- {finding.message}. {finding.suggestion}"
    if code == "duplicate_call":
        return f"- {finding.message}. Make each call once."
    return f"- {finding.message}.{_hint(finding)}"


def schema_excerpt(
    tool: Tool, findings: Sequence[Finding] = (), *, full: bool = False, limit: int = 1200
) -> str:
    """The failing tool's schema, cut to the parameters the findings are about (all with ``full``
    or when the tool has few)."""
    props = tool.properties
    wanted = set(props)
    if not full and len(props) > 6:
        wanted = {str(_loc(f)[0]) for f in findings if _loc(f)} & set(props)
        wanted |= set(tool.required)
    excerpt = {
        "name": tool.name,
        "parameters": {k: v for k, v in props.items() if k in wanted},
        "required": tool.required,
    }
    text = json.dumps(excerpt, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_problem_text(
    index: int,
    name: str,
    findings: Sequence[Finding],
    tool: Tool | None,
    tools: Sequence[str],
    *,
    raw: str | None = None,
    parse_error: str | None = None,
    escalated: bool = False,
    max_echo: int = 300,
) -> str:
    """What is wrong with call ``index`` (one paragraph, for its ``tool`` message or a re-ask)."""
    lines = [f"Call {index} ({name}) was not run."]
    if parse_error:
        echo = raw if raw is None or len(raw) <= max_echo else raw[:max_echo] + "..."
        lines.append(f"- Its arguments could not be read: {parse_error}. You sent: {echo}")
    lines.extend(finding_line(f, tool, tools) for f in findings)
    if tool is not None:
        lines.append(
            f"Schema of {tool.name}: {schema_excerpt(tool, findings, full=escalated or bool(parse_error))}"
        )
    if escalated:
        lines.append(
            "This is the same mistake as in your previous answer; read the schema above before answering."
        )
    return "\n".join(lines)


def turn_problem_text(findings: Sequence[Finding], formats_hint: str = "") -> str:
    """What is wrong with the turn as a whole (format, prose, call count)."""
    lines = []
    for f in findings:
        if f.code == "invalid_format":
            lines.append(f"- The reply could not be read as tool calls: {f.message}.")
        elif f.code == "wrong_tool_count":
            lines.append(f"- {f.message}. {f.suggestion or ''}".rstrip())
        else:
            lines.append(finding_line(f, None))
    if formats_hint:
        lines.append(formats_hint)
    return "\n".join(lines)

"""Turning an invalid call into the error a real API would send back.

A checker given to the environment (:func:`toolmend.check.check`, passed in explicitly as
``Environment(checker=check)``) says what is wrong; a JSON-Schema gate over the arguments backs it
up, so that nothing the spec forbids ever reaches a tool function (and so the environment still
answers sensibly for specs the checker has no opinion on, or without a checker).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from toolmend.schema import ErrorCode, Finding, Tool, ToolCall

__all__ = ["BLOCKING_CODES", "CheckFn", "schema_findings"]

CheckFn = Callable[[list[ToolCall], list[Tool]], list[Finding]]
"""``check(calls, tools) -> findings``: the contract of :func:`toolmend.check.check`."""

BLOCKING_CODES: frozenset[ErrorCode] = frozenset(
    {
        "wrong_tool_name",
        "missing_required",
        "invalid_type",
        "empty_value",
        "redundant_parameter",
        "invalid_format",
        "invalid_value",
        "positional_argument",
    }
)
"""Findings a real API rejects a request for. Count, duplicate and redundant-information
findings describe the plan, not the request, so the call still runs."""

# jsonschema validator keyword → the checklist's code for it.
_KEYWORD_CODES: dict[str, ErrorCode] = {
    "required": "missing_required",
    "additionalProperties": "redundant_parameter",
    "type": "invalid_type",
    "pattern": "invalid_format",
    "format": "invalid_format",
    "minLength": "empty_value",
}


def schema_findings(call: ToolCall, tool: Tool) -> list[Finding]:
    """Findings for arguments that break ``tool.parameters`` (unknown keys included).

    >>> t = Tool(name="f", parameters={"type": "object", "properties": {"n": {"type": "integer"}},
    ...     "required": ["n"]})
    >>> [f.code for f in schema_findings(ToolCall(name="f", arguments={"n": "x", "m": 1}), t)]
    ['redundant_parameter', 'invalid_type']
    """
    findings: list[Finding] = []
    props = tool.properties
    for key in call.arguments:
        if key not in props:
            findings.append(
                Finding(
                    code="redundant_parameter",
                    message=f"unknown parameter {key!r}; accepted: {', '.join(props) or 'none'}",
                    call=0,
                    path=key,
                )
            )
    validator = Draft202012Validator(tool.parameters)
    for err in sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.path)):
        if err.validator == "additionalProperties":
            continue  # reported above with the accepted names
        path = ".".join(str(p) for p in err.absolute_path)
        code = _KEYWORD_CODES.get(str(err.validator), "invalid_value")
        if code == "empty_value" and err.instance != "":
            code = "invalid_value"
        findings.append(Finding(code=code, message=_message(err.message, path), call=0, path=path))
    return findings


def _message(text: str, path: str) -> str:
    return f"parameter {path!r}: {text}" if path else text


def findings_body(findings: list[Finding]) -> tuple[str, str, list[dict[str, Any]]]:
    """(error label, one-line message, detail list) for an error response."""
    first = findings[0]
    message = first.message + (f" ({first.suggestion})" if first.suggestion else "")
    if len(findings) > 1:
        message += f" (and {len(findings) - 1} more problem{'s' if len(findings) > 2 else ''})"
    details = [
        {k: v for k, v in f.model_dump(include={"code", "path", "message", "suggestion"}).items() if v}
        for f in findings
    ]
    return first.code, message, details

"""One entry point for every tool-call format: :func:`parse_calls` and :func:`write_calls`.

``format="auto"`` tries the most specific structure first and takes the first that yields a
call (or a final answer):

1. ``<think>`` is removed (an unclosed one is an ``invalid_format`` finding);
2. **tags** — any ``<tool_call>``/``<call>``/``<reflect>``/``<final>`` tag decides it, unless
   the whole output is one JSON document (the tag is then inside one of its string values);
3. **json** — a JSON action or list of actions, bare or fenced (an OpenAI-shaped object or
   message reports ``format="openai"``; a CriticTool ``FinishAction`` counts as found);
4. **nestools** — a list of ``{"api_name", ...}`` call dicts (JSON or Python literal);
5. **python** — a Python call list ``[f(a=1)]`` or calls filling their own lines.

(Readers that cannot match are skipped: without a ``{`` only Python calls are tried, and when
``api_name`` occurs NesTools goes before JSON — its items never look like JSON actions, so the
outcome is the same and the text is scanned once.)

When nothing matches, ``format`` is ``"none"``, ``text`` is the output, and the near misses
the parsers saw (a cut-off call, an unparsable call-like block) are ``invalid_format``
findings; a plain prose answer has no finding at all. So "abstained", "answered in prose" and
"tried to call but broke the format" stay three distinct outcomes.

>>> parse_calls('[get_weather(city="Paris")]').format
'python'
>>> r = parse_calls('<think>easy</think>{"name": "f", "arguments": {}}')
>>> r.format, r.think, r.ok
('json', 'easy', True)
>>> write_calls(r.calls, "python")
'[f()]'
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats._jsonfmt import parse_json_calls, write_json_calls
from toolmend.formats._lenient import load_lenient
from toolmend.formats._nestools import parse_nestools_calls, write_nestools_calls
from toolmend.formats._openai import parse_openai_message, parse_openai_tool_calls, write_openai_message
from toolmend.formats._python_calls import parse_python_calls, write_python_calls
from toolmend.formats._result import CallFormat, ParseResult
from toolmend.formats._tags import has_tags, parse_tagged_calls, strip_think, write_tagged_calls

__all__ = ["parse_calls", "write_calls"]

log = logging.getLogger(__name__)

_FORMATS = ("auto", "openai", "json", "python", "tags", "nestools")


def parse_calls(text: str, format: CallFormat = "auto") -> ParseResult:
    """Parse a model's raw output into calls and findings. Never raises on model text.

    ``format`` forces one reader; ``"auto"`` detects (see the module docs for the order).
    An unknown ``format`` is a :class:`~toolmend._errors.ConfigError` (a caller's mistake).
    """
    if format not in _FORMATS:
        raise ConfigError(f"unknown call format {format!r}; expected one of {', '.join(_FORMATS)}")
    if not isinstance(text, str):
        result = ParseResult(format="none")
        result.flag("invalid_format", f"expected text, got {type(text).__name__}", raw=repr(text)[:200])
        return result
    try:
        return _parse(text, format)
    except Exception as exc:
        # Last line of defence: a parser bug must not crash a whole evaluation run. The fuzz
        # tests assert that this branch is never reached.
        log.exception("internal parser error on a %d-character output (kept as a finding)", len(text))
        result = ParseResult(format="none", text=text)
        result.flag(
            "invalid_format", f"internal parser error: {type(exc).__name__}: {exc}", internal_error=True
        )
        return result


_JSON_START = re.compile(r"\s*[\[{]")


def _whole_json(text: str) -> bool:
    """Whether ``text`` is one JSON document: a tag inside one of its strings is a value, not a tag.
    (Tagged replies start with a tag, so they cost one failed match here.)"""
    if not _JSON_START.match(text):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _parse(text: str, format: str) -> ParseResult:
    if format == "tags" or (format == "auto" and has_tags(text) and not _whole_json(text)):
        return parse_tagged_calls(text)
    rest, think, problem = strip_think(text)
    if format == "auto" and has_tags(rest) and not _whole_json(rest):
        return parse_tagged_calls(text)
    result = _dispatch(rest, format)
    result.think = think
    if problem:
        result.flag("invalid_format", problem)
    if format != "auto" and result.format == "none" and not result.findings and rest.strip():
        # A reader the caller chose found nothing it recognises: that is not a clean empty answer.
        result.flag("invalid_format", f"the output does not read as {format} tool calls", raw=rest[:200])
    return result


def _dispatch(text: str, format: str) -> ParseResult:
    if format == "json":
        return parse_json_calls(text)
    if format == "python":
        return parse_python_calls(text)
    if format == "nestools":
        return parse_nestools_calls(text)
    if format == "openai":
        return _parse_openai_text(text)
    attempts: list[ParseResult] = []
    for parser in _auto_order(text):
        attempt = parser(text)
        if attempt.calls or attempt.final is not None:
            return attempt
        attempts.append(attempt)
    result = ParseResult(format="none", text=text.strip())
    seen: set[str] = set()
    for attempt in attempts:
        for f in attempt.findings:
            key = f"{f.message}|{f.data.get('raw', f.data.get('source'))}"
            if f.code == "invalid_format" and key not in seen:
                seen.add(key)
                result.findings.append(f)
    return result


def _auto_order(text: str) -> list[Callable[[str], ParseResult]]:
    # Every JSON action and NesTools item is an object, so text without "{" skips both readers.
    # A NesTools item (``api_name``) never looks like a JSON action (``name``), so trying it
    # first when ``api_name`` occurs changes no outcome; it only saves a second scan.
    if "{" not in text:
        return [parse_python_calls]
    if "api_name" in text:
        return [parse_nestools_calls, parse_json_calls, parse_python_calls]
    return [parse_json_calls, parse_python_calls]


def _parse_openai_text(text: str) -> ParseResult:
    """A serialised assistant message, or a bare ``tool_calls`` list."""
    try:
        value, how = load_lenient(text.strip())
    except ValueError:
        result = ParseResult(format="none", text=text.strip())
        result.flag("invalid_format", "not a JSON OpenAI message or tool_calls list", raw=text)
        return result
    if isinstance(value, dict):
        result = parse_openai_message(value)
    elif isinstance(value, list):
        result = parse_openai_tool_calls(value)
    else:
        result = ParseResult(format="none")
        result.flag("invalid_format", "expected an OpenAI message object or a tool_calls list", raw=text)
    if how != "json":
        result.flag("invalid_format", "the message was not valid JSON; recovered", raw=text, method=how)
    return result


def write_calls(calls: Sequence[ToolCall], format: CallFormat, **options: Any) -> str:
    """Write calls in ``format`` (not ``auto``); ``options`` go to that format's writer.

    ============  =========================================================================
    ``openai``    :func:`~toolmend.formats._openai.write_openai_message` (``content=``)
    ``json``      :func:`~toolmend.formats._jsonfmt.write_json_calls` (``key=``, ``final=``, ``extras=`` …)
    ``python``    :func:`~toolmend.formats._python_calls.write_python_calls` (``brackets=``)
    ``tags``      :func:`~toolmend.formats._tags.write_tagged_calls` (``reflect=``, ``final=``, ``think=``, ``tag=``)
    ``nestools``  :func:`~toolmend.formats._nestools.write_nestools_calls` (``api_ids=``, ``responses=``)
    ============  =========================================================================
    """
    writers = {
        "openai": write_openai_message,
        "json": write_json_calls,
        "python": write_python_calls,
        "tags": write_tagged_calls,
        "nestools": write_nestools_calls,
    }
    if format not in writers:
        raise ConfigError(f"cannot write format {format!r}; choose one of {', '.join(writers)}")
    return writers[format](calls, **options)  # type: ignore[operator]

"""CriticTool's text formats: a model's reply read the way CriticTool's evaluator does (its
``format_load`` procedure), and the tool list embedded in a CriticTool system prompt.

The reply is expected to hold one JSON action, ``{"error"?, "thought"?, "name", "args"}``. The
official procedure is lenient about wrapping (a Markdown fence, prose around the object, Python
literals, single quotes) but all-or-nothing about the object itself: when it cannot be read, every
field is the empty string, and the scorer turns that into zeros — never an exception.

>>> a = parse_action('Sure! ```json\\n{"name": "Email.send", "args": {"to": "a@b.c"}}\\n```')
>>> a.name, a.args
('Email.send', {'to': 'a@b.c'})
>>> parse_action("I cannot help with that.").parsed
False
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from toolmend.errors import ParseError
from toolmend.formats.tools import load_tools
from toolmend.schema import Tool

__all__ = ["CATEGORIES", "FINISH", "ParsedAction", "parse_action", "parse_tool_list", "prompt_tools"]

CATEGORIES: tuple[str, ...] = (
    "tool_select_error",
    "tool_hallucination_error",
    "parameters_value_error",
    "parameters_key_error",
)
"""The four internal-error labels, exactly as the evaluator compares them."""

FINISH = "FinishAction"
"""The pseudo-tool that ends an episode; its ``args`` is a string (answer or message to the user)."""

_TOOLS_END = "\nTo use a tool"

_FENCE = "```json"


class ParsedAction(BaseModel):
    """One reply read with the official procedure.

    ``name`` and ``thought`` are always strings (the official code passes them through ``str()``);
    ``error`` and ``args`` are kept exactly as parsed, so ``args`` may be a dict, a string (a
    ``FinishAction`` answer) or anything else the model wrote. Missing keys are ``""``.
    """

    model_config = ConfigDict(frozen=True)

    error: Any = ""
    thought: str = ""
    name: str = ""
    args: Any = ""
    parsed: bool = False
    """Whether an object was read at all (False: every field is ``""``)."""

    def same_call(self, name: Any, args: Any) -> bool:
        """Exact repeat of a call, compared as the official retry check does (``==`` on args)."""
        try:
            return bool(self.name == name and self.args == args)
        except Exception:  # exotic parsed values may have a failing __eq__; not a repeat then
            return False


def _cut_object(text: str, find_object: bool) -> str | None:
    if _FENCE in text:
        # Everything after the first fence is kept, later fences included: a reply holding two
        # fenced objects spans both and fails to read, as in the official procedure.
        text = text[text.find(_FENCE) + len(_FENCE) :].strip("`").strip()
    if not find_object:
        return text
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return None
    return text[start : end + 1]


def _load(text: str) -> Any:
    # The official order: Python literal first (models often answer with a repr), then JSON,
    # then JSON with single quotes turned into double ones.
    for attempt in (
        lambda: ast.literal_eval(text),
        lambda: json.loads(text),
        lambda: json.loads(text.replace("'", '"')),
    ):
        try:
            return attempt()
        except Exception:  # SyntaxError, ValueError, RecursionError, MemoryError on odd input
            continue
    return None


def parse_action(text: Any, *, find_object: bool = True) -> ParsedAction:
    """Read one model reply into a :class:`ParsedAction`; never raises.

    Steps (as the official ``format_load``): keep all that follows the first ```` ```json ````
    fence; cut from the first ``{`` to the last ``}``; try ``ast.literal_eval``, ``json.loads``,
    then ``json.loads`` with ``'`` replaced by ``"``; take ``error``, ``thought``, ``name`` and
    ``args`` from the object.

    ``find_object=False`` skips the ``{``…``}`` cut, so prose around the object makes the reply
    unreadable: the official retry loop reads replies that way (only its scorer cuts).

    >>> parse_action("{'error': 'tool_select_error', 'name': 'A.b', 'args': {}}").error
    'tool_select_error'
    >>> parse_action('Again: {"name": "A.b", "args": {}}', find_object=False).parsed
    False
    """
    if not isinstance(text, str):
        return ParsedAction()
    cut = _cut_object(text, find_object)
    data = _load(cut) if cut is not None else None
    if not isinstance(data, dict):
        return ParsedAction()
    return ParsedAction(
        error=data.get("error", ""),
        thought=_as_str(data.get("thought", "")),
        name=_as_str(data.get("name", "")),
        args=data.get("args", ""),
        parsed=True,
    )


def _as_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # str() of a huge int over the digit limit raises ValueError
        return ""


def _tool_span(system_prompt: str) -> str:
    start, end = system_prompt.find("["), system_prompt.find(_TOOLS_END)
    if start == -1 or end == -1 or end < start:
        raise ParseError("no tool list between the first '[' and '\\nTo use a tool'")
    return system_prompt[start:end]


def _read_span(span: str) -> list[Any]:
    try:
        tools = json.loads(span)
    except json.JSONDecodeError:
        try:
            tools = ast.literal_eval(span)
        except Exception as exc:
            raise ParseError(f"the tool list is neither JSON nor a Python literal ({exc})") from None
    if not isinstance(tools, list):
        raise ParseError(f"the tool list must be a list, got {type(tools).__name__}")
    return tools


def parse_tool_list(system_prompt: str) -> list[Any]:
    """The raw tool specs embedded in a CriticTool system prompt.

    Raises :class:`~toolmend.errors.ParseError` (a ``ValueError``) when the span is missing or is neither JSON nor a Python literal list.

    >>> parse_tool_list('You can call:\\n[{"name": "A.b"}]\\nTo use a tool, reply in JSON.')
    [{'name': 'A.b'}]
    """
    return _read_span(_tool_span(system_prompt))


@lru_cache(maxsize=256)
def _span_tools(span: str) -> tuple[Tool, ...]:
    # Every record (and every prompt the critic sees) of a suite repeats one of a few tool lists;
    # converting each distinct list once is what keeps loading and critiquing linear in text size.
    return tuple(load_tools(_read_span(span), dialect="critictool"))


def prompt_tools(system_prompt: str) -> list[Tool]:
    """The tools of a CriticTool system prompt as :class:`~toolmend.Tool` objects.

    Each distinct tool list is converted once per process (memoised on its exact text); the list
    is new on every call, the :class:`~toolmend.Tool` objects in it are shared — treat them as
    read-only. Raises :class:`~toolmend.errors.ParseError` for an unreadable span and
    :class:`~toolmend.DatasetError` for an invalid tool spec.

    >>> [t.name for t in prompt_tools('Tools:\\n[{"name": "A.b"}]\\nTo use a tool, reply in JSON.')]
    ['A.b']
    """
    return list(_span_tools(_tool_span(system_prompt)))

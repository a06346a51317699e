"""Reading a model's reply the way CriticTool's evaluator does (its ``format_load`` procedure).

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
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ParsedAction", "parse_action"]

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

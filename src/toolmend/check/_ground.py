"""Grounding: string arguments whose value appears nowhere in the conversation.

The schema check passes a call that names the right tool with well-typed values, yet the most
common mistake left after it is a wrong value: another city than the one asked for, a name the
user never wrote. Most string arguments are copied, from the request or from a tool's output,
so a value found in neither is likely wrong. This check is opt-in (a value the model is meant
to compose or compute, such as a date from "tomorrow", is not in the conversation either):

>>> from toolmend import ToolCall
>>> tools = [{"name": "weather", "parameters": {"type": "object", "properties": {
...     "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}]
>>> call = ToolCall(name="weather", arguments={"city": "London", "unit": "f"})
>>> [(f.code, f.path, f.message) for f in ungrounded([call], "Weather in Paris, please.", tools)]
[('invalid_value', 'city', "'city' is 'London', which appears nowhere in the conversation")]

What is not checked: values under an ``enum`` or ``const`` (the schema check owns them, and the
right one is chosen, not copied), values of one character, values of more than ``max_words``
words (text the model writes, such as a message body), non-strings, and references.
Matching ignores case and runs of whitespace, and a value must not be part of a longer word
("Osl" is not found in "Oslo"; in scripts written without spaces, such as Chinese, any part
counts, as does any part of a word for a value of over 100 characters). A value also counts as
mentioned when the conversation has it in a common other form: spaced differently around
punctuation ("3x + 2" for "3x+2"), with underscores for spaces, as a plural ("Big Mac" for "two
Big Macs"), as a date written another way ("2023-04-25" for "April 25th 2023", "15:00" for "3 in
the afternoon"), as the city of a time zone ("America/New_York"), as the values of a search
query's fields ("artist:Miley Cyrus" for "by Miley Cyrus"), as a code of a US state, a currency,
a country or a unit named in full ("CA" for "California", "EUR" for "euros"), or as the place a
qualified value starts with ("Nashville, TN" for "Nashville"):

>>> [f.path for f in ungrounded([ToolCall(name="weather", arguments={"city": "Paris, FR"})],
...                             "Weather in Paris on 2023-04-25?", tools)]
[]

A value the model computes (the date of "next Friday") is still reported: the check cannot know it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from toolmend._schema import Finding, Message, Tool, ToolCall
from toolmend.check._checker import Checker, _short, format_path
from toolmend.check._known import KNOWN

__all__ = ["ungrounded"]

MAX_WORDS = 12
"""Longer string values are taken as written by the model, not copied."""

LOOSE_MAX = 100
"""Longer values are matched only as written: the other forms cost a search per value's token,
and a value from an untrusted reply can be long."""

WHOLE_WORD_MAX = 100
"""Longer values are found anywhere, even inside a longer word. The boundary matters for a short
value ("Osl" is not in "Oslo"); looking at it for every occurrence of a long value that repeats
itself, in a long text, would cost their lengths' product."""

_SPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"\W")

Context = str | Sequence[Any]


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _spaced(ch: str) -> bool:
    """Whether ``ch`` is a word character of a script that separates its words (CJK does not:
    "油炸鸡翅" is a word of "30个油炸鸡翅" with no boundary between them)."""
    return _word(ch) and unicodedata.east_asian_width(ch) not in "WF"


def _tokens(value: str) -> list[str]:
    """The words and punctuation of ``value``: "without_joker" is "without joker", "x**2" is "x^2"."""
    return re.findall(r"[^\W_]+|[^\w\s]", value.replace("_", " ").replace("**", "^"))


def _loose(value: str, tokens: list[str]) -> str:
    """A regular expression for ``value`` (its :func:`_tokens`) as a whole word, with any spacing
    around its punctuation ("3x + 2" is "3x+2"), underscores as spaces, and a plural ending ("Big
    Mac" is in "two Big Macs")."""
    body = r"\s*".join(r"(?:\^|\*\*)" if t == "^" else re.escape(t) for t in tokens)
    body += r"(?:e?s)?" if value[-1].isalpha() else ""
    left = r"(?<!\w)" if _spaced(value[0]) else ""
    right = r"(?!\w)" if _spaced(value[-1]) else ""
    return left + body + right


def _mentions(text: str, value: str) -> bool:
    """``value`` in ``text``, not as a part of a longer word: "Osl" is not in "Oslo"."""
    if len(value) > WHOLE_WORD_MAX:
        return value in text
    # str.find, not a regular expression: compiling one per value was most of the check's time.
    left, right = _spaced(value[0]), _spaced(value[-1])
    at = text.find(value)
    while at >= 0:
        end = at + len(value)
        if not (left and at and _word(text[at - 1])) and not (right and end < len(text) and _word(text[end])):
            return True
        if left:
            # The next candidate starts a word: skip the rest of this one, or a long word that
            # repeats the value ("abab…") costs a comparison at each of its letters.
            space = _NOT_WORD.search(text, at)
            if space is None:
                return False
            at = text.find(value, space.end())
        else:
            at = text.find(value, at + 1)
    return False


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]  # fmt: skip
_MONTH_NUMBER = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)}
_NAMES = "|".join(f"{m[:3]}(?:{m[3:]})?" for m in _MONTHS)
# A month name next to a number ("May 3rd", "the 2nd of march", "Jun.20"): "you may" names no month.
_MONTH = re.compile(rf"\d(?:st|nd|rd|th)?\s+(?:of\s+)?({_NAMES})(?!\w)|(?<!\w)({_NAMES})\.?(?=\s*,?\s*\d)")
_DATE = re.compile(
    r"(\d{1,4})[-/.](\d{1,4})(?:[-/.](\d{1,4}))?(?:[t ](\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
)


def _date_seen(text: str, value: str) -> bool:
    """A date (and time) value written in another form than the conversation's: "2023-04-25" for
    "April 25th 2023", "2024-03-12 16:00:00" for "12/03/2024 16:00", "2023-11-01T20:00:00" for
    "November 1, 2023 at 8pm". Its year, month and day must each be mentioned (the month as a
    number or by name, the day with or without "st"/"th"), and its time, when not midnight."""
    m = _DATE.fullmatch(value)
    if not m:
        return False
    numbers = [int(g) for g in m.groups()[:3] if g]
    years = [n for n in numbers if n >= 1000]
    rest = [n for n in numbers if 1 <= n <= 31]
    if len(years) != 1 or len(years) + len(rest) != len(numbers):
        return False
    said = {int(n) for n in re.findall(r"(?<![\d:])(\d{1,4})(?:st|nd|rd|th)?(?![\d:])", text)}
    months = {_MONTH_NUMBER[(a or b)[:3]] for a, b in _MONTH.findall(text)}
    # Which of the two small numbers is the month depends on the locale: either reading will do.
    if years[0] not in said or not any(
        rest[k] in said | months and all(n in said for j, n in enumerate(rest) if j != k)
        for k in range(len(rest))
    ):
        return False
    if m[4] is None or (int(m[4]), int(m[5])) == (0, 0):
        return True
    hour, minute = int(m[4]), int(m[5])
    part = "(?:afternoon|evening)" if hour >= 12 else "morning"
    clock = rf"(?<!\d)0?{hour % 12 or 12}(?::{minute:02d})?\s*(?:{'p' if hour >= 12 else 'a'}\.?m\b|(?:o'clock )?in the {part})"
    return (
        f"{hour}:{minute:02d}" in text
        or f"{hour:02d}:{minute:02d}" in text
        or re.search(clock, text) is not None
    )


_ZONE = re.compile(
    r"(?:africa|america|antarctica|asia|atlantic|australia|europe|indian|pacific)/(?:[a-z_]+/)?([a-z_-]+)"
)
_FIELD_VALUE = r'[^\W\d_]\w*:("[^"]*"|\S+(?:\s+(?![^\W\d_]\w*:)\S+)*)'
_QUERY = re.compile(rf"{_FIELD_VALUE}(?:\s+{_FIELD_VALUE})*")
_FIELD = re.compile(_FIELD_VALUE)


def _seen(text: str, value: str, known: bool = True) -> bool:
    """Whether the conversation mentions ``value`` in some form (``text`` and ``value`` normalized);
    ``known``: a code counts by its name too ("EUR" for "euros", :data:`KNOWN`)."""
    # A value escaped in a JSON tool output (``"Jos\\u00e9"``) still counts as seen.
    if _mentions(text, value) or _mentions(text, _norm(json.dumps(value)[1:-1])):
        return True
    if len(value) > LOOSE_MAX or not re.search(r"[^\W_]", value):
        return False  # too long to search loosely, or no letter or digit to anchor the search
    # Each word must be in the text somewhere before a pattern is built for the looser forms.
    tokens = _tokens(value)
    if all(t in text for t in tokens if t.isalnum()) and re.search(_loose(value, tokens), text):
        return True
    if _date_seen(text, value):
        return True
    if known and any(_seen(text, name, known=False) for name in KNOWN.get(value, ())):
        return True
    # "America/New_York" for "New York": a time zone named by its city.
    zone = _ZONE.fullmatch(value)
    if zone and _seen(text, zone[1].replace("_", " ")):
        return True
    # "artist:Miley Cyrus track:Wrecking Ball": a search query of fields the model named, each
    # with a value the request gave.
    fields = [v.strip('"') for v in _FIELD.findall(value)] if _QUERY.fullmatch(value) else []
    if fields and all(len(v) > 1 and _seen(text, v) for v in fields):
        return True
    # "Nashville, TN" for "Nashville": a place the request names, qualified by the model.
    head, _, qualifier = value.partition(",")
    head = head.strip()
    return bool(qualifier) and len(qualifier.split()) <= 3 and len(head) > 1 and _seen(text, head)


def _context_text(context: Context) -> str:
    """The text of a conversation: a string, or messages as toolmend :class:`Message`, OpenAI
    dicts or message objects (LangChain's). What is none of these is skipped: the conversation
    may come from an untrusted request body."""
    if isinstance(context, str):
        return context
    parts: list[str] = []
    for m in context if isinstance(context, list | tuple) else ():
        if isinstance(m, str):
            parts.append(m)
            continue
        if isinstance(m, Message):
            parts.append(m.content)
            parts += [json.dumps(c.arguments, ensure_ascii=False, default=str) for c in m.tool_calls]
            continue
        if isinstance(m, Mapping):
            content, calls = m.get("content"), m.get("tool_calls")
        elif hasattr(m, "content"):
            content, calls = m.content, getattr(m, "tool_calls", None)
        else:
            continue
        parts.append(
            content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        )
        if isinstance(calls, list):
            parts += [json.dumps(c, ensure_ascii=False, default=str) for c in calls]
    return "\n".join(parts)


def _chosen(schema: Any) -> bool:
    """Whether the schema lists the allowed values (the value is chosen, not copied)."""
    if not isinstance(schema, Mapping):
        return False
    if "enum" in schema or "const" in schema:
        return True
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list) or not branches:
        return False
    return all(_chosen(b) or (isinstance(b, Mapping) and b.get("type") == "null") for b in branches)


def _leaves(
    value: Any, schema: Any, loc: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    schema = schema if isinstance(schema, Mapping) else {}
    if isinstance(value, str):
        if not _chosen(schema):
            yield loc, value
    elif isinstance(value, Mapping):
        props = schema.get("properties")
        for key, item in value.items():
            yield from _leaves(item, props.get(key) if isinstance(props, Mapping) else None, (*loc, key))
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            yield from _leaves(item, items, (*loc, i))


def ungrounded(
    calls: Sequence[ToolCall | Mapping[str, Any]],
    context: Context,
    tools: Checker | Iterable[Tool | Mapping[str, Any]] = (),
    *,
    max_words: int = MAX_WORDS,
    besides: Sequence[Finding] = (),
) -> list[Finding]:
    """An ``invalid_value`` finding (``data["ungrounded"]`` set) for each copied-looking string
    argument of ``calls`` that ``context`` never mentions. ``context`` is the conversation before
    the calls: a text, or messages (:class:`~toolmend.Message` or ``{"role", "content"}`` dicts),
    tool outputs included. ``tools`` gives the schemas that mark chosen values (``enum``).
    ``besides``: findings already made; a value at a place one of them names is not reported again."""
    checker = tools if isinstance(tools, Checker) else Checker(tools)
    text = _norm(_context_text(context))
    taken = {(f.call, f.path) for f in besides}
    found: list[Finding] = []
    for i, raw in enumerate(calls):
        call = raw if isinstance(raw, ToolCall) else ToolCall.model_validate(raw)
        tool = checker.tools.get(call.name)
        for loc, value in _leaves(call.arguments, tool.parameters if tool else None, ()):
            want = _norm(value)
            if len(want) < 2 or len(want.split(" ")) > max_words:
                continue
            if _seen(text, want):
                continue
            path = format_path(loc)
            if (i, path) in taken:
                continue
            found.append(
                Finding(
                    code="invalid_value",
                    message=f"'{path}' is {_short(value, 120)}, which appears nowhere in the conversation",
                    call=i,
                    path=path,
                    suggestion="Use the value the request or a tool's output gives.",
                    data={"ungrounded": True, "value": value},
                )
            )
    return found

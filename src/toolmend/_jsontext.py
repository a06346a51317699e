"""JSON text that survives any model output, lone UTF-16 surrogates included.

A model's text can hold a lone surrogate (``"\\ud83d"``: an emoji cut at a token boundary, sent
escaped by the server and decoded by ``json.loads``). Such a ``str`` cannot be encoded as UTF-8,
so writing it to a file, SQLite or stdout fails. Here it is written as the JSON escape
``\\ud83d`` instead, which keeps it losslessly (``json.loads`` gives back the same string) while
the text stays valid UTF-8.

>>> text = dumps({"out": "cut \\ud83d"})
>>> text, json.loads(text) == {"out": "cut \\ud83d"}
('{"out": "cut \\\\ud83d"}', True)
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

__all__ = ["depth", "dumps", "escape_surrogates", "load_model", "model_json", "printable", "utf8"]

_SURROGATE = re.compile("[\ud800-\udfff]")
M = TypeVar("M", bound=BaseModel)


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as its ``\\uXXXX`` JSON escape (apply to JSON
    text only: there a surrogate can only stand inside a string literal)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def printable(value: Any) -> Any:
    """``value`` (JSON-like) with lone surrogates in its strings shown as ``\\uXXXX`` text, for
    printing to a terminal."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v) for v in value]
    return value


def depth(value: Any, limit: int) -> int:
    """JSON nesting depth of ``value`` (objects and lists count), measured without recursion and
    stopping as soon as it passes ``limit``, so that any nesting can be refused before recursive
    code meets it.

    >>> depth({"a": [[1]]}, 10), depth(1, 10), depth([[[[[]]]]], 2)
    (3, 0, 3)
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list | tuple):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend((c, level + 1) for c in (node.values() if isinstance(node, dict) else node))
    return deepest


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes for hashing; lone surrogates are kept (``surrogatepass``), so
    distinct texts never hash alike."""
    return text.encode("utf-8", "surrogatepass")


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` with lone surrogates escaped."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False, **options))


def model_json(model: BaseModel, **options: Any) -> str:
    """``model.model_dump_json(**options)``, or the same JSON with lone surrogates escaped where
    pydantic cannot encode them."""
    try:
        return model.model_dump_json(**options)
    except PydanticSerializationError:
        indent = options.pop("indent", None)
        return dumps(model.model_dump(mode="json", **options), indent=indent)


def load_model(cls: type[M], text: str | bytes) -> M:
    """``cls.model_validate_json(text)``; JSON that pydantic's parser refuses only for a lone
    surrogate escape is read with :mod:`json` instead."""
    try:
        return cls.model_validate_json(text)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            raise
        try:
            value = json.loads(text)
        except ValueError:
            raise exc from None
        # The same reading as model_validate_json, which reads toolmend's {"$ref": ...} back as
        # a call reference (toolmend._schema.REFS; other models ignore the context).
        return cls.model_validate(value, context={"refs": True})

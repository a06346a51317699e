r"""JSON and JSON Lines for all of toolmend: the one reader and the one writer.

Every file and HTTP body that toolmend reads or writes as JSON goes through this module
(``tests/test_layers.py`` checks that ``orjson`` and JSON-lines splitting appear nowhere else).
The rules, the same for predictions, traces, run records, training data, reports and the proxy:

**Lines.** A JSON Lines text is split at ``"\n"`` only, and a ``"\r"`` before it is dropped.
JSON allows U+2028, U+2029, ``"\x85"`` and the other characters that :meth:`str.splitlines`
breaks at raw inside a string, so splitting there would cut a record in two. Blank lines are
skipped; line numbers count every line.

**Byte order mark.** A UTF-8 BOM at the start of a file or body is skipped; anywhere else it is
text.

**Depth.** Arrays and objects nested more than :data:`MAX_DEPTH` levels deep are refused: a
:class:`json.JSONDecodeError` from :func:`loads`, a :class:`~toolmend.DatasetError` naming the
file and line from the file readers. Recursive code (Python's own ``json`` included) fails on
such input with a ``RecursionError`` instead.

**NaN and Infinity.** Read as the floats they stand for (Python's ``json`` writes them, and so do
servers built on it, say for a log-probability of minus infinity). Written as ``null``, as
orjson, pydantic and JavaScript's ``JSON.stringify`` write them, so every file and body toolmend
writes is standard JSON (RFC 8259) that any reader accepts.

**Lone surrogates.** A model's text can hold a lone UTF-16 surrogate (``"\ud83d"``: an emoji cut
at a token boundary, sent escaped by the server). Read: the escape gives that one-character
string. Written: as the escape again, so the output stays valid UTF-8 and reads back the same
string. (Such a ``str`` cannot be encoded as UTF-8: written raw, it fails.)

**Speed.** orjson reads and writes about four times faster than the standard library; it is used
wherever its result is the same value. The standard library takes over where orjson refuses
(``NaN``, a lone surrogate, integers beyond 64 bits, keys that are not strings) and where orjson
would lose information (it reads integers beyond 64 bits as floats).

>>> text = dumps({"out": "cut \ud83d", "score": float("nan")})
>>> text
'{"out":"cut \\ud83d","score":null}'
>>> loads(text) == {"out": "cut \ud83d", "score": None}
True
>>> list(lines('{"a": "x\u2028y"}\r\n\n[1]\n'))
[(1, '{"a": "x\u2028y"}'), (3, '[1]')]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import orjson
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from toolmend._errors import DatasetError

__all__ = [
    "MAX_DEPTH",
    "JsonDoc",
    "depth",
    "dumpb",
    "dumps",
    "escape_surrogates",
    "lines",
    "load_model",
    "loads",
    "model_json",
    "printable",
    "read_json",
    "read_json_doc",
    "read_jsonl",
    "read_text",
    "utf8",
]

MAX_DEPTH = 512
"""Arrays and objects nested deeper than this are refused on reading. Deep enough for any real
document; shallow enough that the standard library (where it reads instead of orjson) and the
recursive code behind a reader never meet Python's recursion limit."""

_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels)"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BOM = "\ufeff"
_BOM_BYTES = b"\xef\xbb\xbf"
# Nineteen digits in a row may be an integer beyond 64 bits, which orjson reads as a float; the
# standard library reads such a text instead (digits in strings only cost that slower read).
# Found by mapping every digit to "0" and every other byte to " " (a C loop, unlike a regex).
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_INT = b"0" * 19
# A string literal, or a bracket outside one.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
# orjson writes what the standard library writes: dataclasses and datetimes go to ``default``.
_ORJSON = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_INDENT_LINE = re.compile(rb"\n( +)")

M = TypeVar("M", bound=BaseModel)


# -- reading ---------------------------------------------------------------------------------------


def loads(data: str | bytes | bytearray) -> Any:
    """The JSON value in ``data`` (text, or bytes in UTF-8 as HTTP bodies come; a BOM at the start
    is skipped).

    Raises :class:`json.JSONDecodeError` (a :class:`ValueError`; its message says what and where)
    for text that is not JSON or is nested deeper than :data:`MAX_DEPTH`, and
    :class:`UnicodeDecodeError` for bytes that are not text, as :func:`json.loads` does.

    >>> loads(b'{"a": [1, "x"]}'), loads('{"a": NaN}'), loads("18446744073709551617")
    ({'a': [1, 'x']}, {'a': nan}, 18446744073709551617)
    >>> loads("[" * 100_000)
    Traceback (most recent call last):
    ...
    json.decoder.JSONDecodeError: nested too deeply (more than 512 levels): line 1 column 513 (char 512)
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _loads_std(data)
    # The two checks below cost a fraction of orjson's parse: on the proxy's hot path they run
    # for every request and every stream event.
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _LONG_INT in raw.translate(_DIGITS_ONLY):
        return _loads_std(data)
    # Deeper than MAX_DEPTH takes more than MAX_DEPTH bytes, and as many opening brackets.
    if (
        len(raw) > MAX_DEPTH
        and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
        and depth(value, MAX_DEPTH) > MAX_DEPTH
    ):
        raise _too_deep(_text(data)) or json.JSONDecodeError(_DEEP, "", 0)
    return value


def _text(data: str | bytes | bytearray) -> str:
    if isinstance(data, str):
        return data
    # As json.loads decodes bytes (it takes UTF-16 and UTF-32 too, and UTF-8 surrogate bytes).
    return bytes(data).decode(json.detect_encoding(data), "surrogatepass")


def _too_deep(text: str) -> json.JSONDecodeError | None:
    """The error for ``text`` nested deeper than :data:`MAX_DEPTH`, at the bracket that goes too
    deep; ``None`` when it does not."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    level = 0
    for m in _STRUCTURE.finditer(text):
        c = m.group()
        if c in "[{":
            level += 1
            if level > MAX_DEPTH:
                return json.JSONDecodeError(_DEEP, text, m.start())
        elif c in "]}":
            level -= 1
    return None


def _loads_std(data: str | bytes | bytearray) -> Any:
    text = _text(data)
    if text.startswith(_BOM):
        text = text[1:]
    error = _too_deep(text)
    if error is not None:
        raise error
    try:
        return json.loads(text)
    except RecursionError:  # a deep stack already: the limit above leaves room for one
        raise json.JSONDecodeError(_DEEP, text, 0) from None


def lines(text: str) -> Iterator[tuple[int, str]]:
    r"""``(line number, line)`` for each non-blank line of JSON Lines ``text`` (see the module
    docstring: lines end at ``"\n"`` only)."""
    for n, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip():
            yield n, line


def read_text(path: str | Path) -> str:
    """The UTF-8 text of the file at ``path``, a BOM at its start skipped. Raises
    :class:`OSError` and :class:`UnicodeDecodeError` as :meth:`Path.read_text` does, for the
    caller to name the file."""
    return Path(path).read_text(encoding="utf-8-sig")


def _cannot_read(path: Path, exc: OSError) -> DatasetError:
    return DatasetError(f"cannot read: {exc.strerror or exc}", path=path)


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> DatasetError:
    return DatasetError(f"not UTF-8 text ({exc.reason})", path=path)


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path``.

    Raises :class:`~toolmend.DatasetError` when the file cannot be read or is not valid JSON.
    """
    return read_json_doc(path).value


def read_json_doc(path: str | Path) -> JsonDoc:
    """The JSON document in ``path`` with the line of each top-level item (:class:`JsonDoc`).

    Raises :class:`~toolmend.DatasetError` when the file cannot be read or is not valid JSON.
    """
    p = Path(path)
    try:
        text = read_text(p)
    except OSError as exc:
        raise _cannot_read(p, exc) from exc
    except UnicodeDecodeError as exc:
        raise _not_utf8(p, exc) from exc
    try:
        value = loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=p
        ) from exc
    return JsonDoc(p, text, value)


_SPACE = re.compile(r"[ \t\n\r]*")


class JsonDoc:
    r"""A JSON document read whole, that can say on which line each top-level item starts
    (an array element, or an object member: a record of a file keyed by id), so that an error
    in a record names its line as a JSON Lines error does.

    >>> doc = JsonDoc(Path("d.json"), '{"a": 1,\n "b": {"c": 2},\n "a": 3}', {"a": 3, "b": {"c": 2}})
    >>> doc.line("b"), doc.error("b", "expected a list", "c").args[0]
    (2, "d.json, line 2, field 'b.c': expected a list")
    >>> doc.check_unique_keys()
    Traceback (most recent call last):
    ...
    toolmend._errors.DatasetError: d.json, line 3, field 'a': duplicate id 'a': also on line 1
    """

    def __init__(self, path: Path, text: str, value: Any) -> None:
        self.path = path
        self.text = text
        self.value = value
        self._items: list[tuple[str | int, int]] | None = None

    def items(self) -> list[tuple[str | int, int]]:
        """``(key or index, line)`` of each top-level item, in file order (repeated keys too)."""
        if self._items is None:
            self._items = _top_level_items(self.text)
        return self._items

    def line(self, key: str | int) -> int | None:
        """The line where top-level item ``key`` starts (its last occurrence, which JSON keeps)."""
        found = [n for k, n in self.items() if k == key]
        return found[-1] if found else None

    def error(self, key: str | int, message: str, field: str = "") -> DatasetError:
        """A :class:`~toolmend.DatasetError` at item ``key`` (``field`` inside it)."""
        head = f"[{key}]" if isinstance(key, int) else str(key)
        where = f"{head}.{field}" if field and not field.startswith("[") else f"{head}{field}"
        return DatasetError(message, path=self.path, line=self.line(key), field=where)

    def check_unique_keys(self) -> None:
        """A top-level object's keys are record ids: a repeated one (which JSON would silently
        overwrite) is a :class:`~toolmend.DatasetError` naming both lines."""
        first: dict[str, int] = {}
        for key, line in self.items():
            if isinstance(key, str):
                seen = first.setdefault(key, line)
                if seen != line:
                    raise DatasetError(f"duplicate id {key!r}: also on line {seen}", path=self.path,
                                       line=line, field=key)  # fmt: skip


def _top_level_items(text: str) -> list[tuple[str | int, int]]:
    # Only called on text that loads() accepted (no deeper than MAX_DEPTH), so the walk cannot fail.
    decoder = json.JSONDecoder()
    out: list[tuple[str | int, int]] = []
    i = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if i >= len(text) or text[i] not in "[{":
        return out
    is_object = text[i] == "{"
    i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    line, counted, index = 1, 0, 0
    while i < len(text) and text[i] not in "]}":
        line += text.count("\n", counted, i)
        counted = i
        key: str | int = index
        if is_object:
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = _SPACE.match(text, i).end() + 1  # type: ignore[union-attr]  # past ":"
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        out.append((key, line))
        _, i = decoder.raw_decode(text, i)
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        if i < len(text) and text[i] == ",":
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
        index += 1
    return out


@overload
def read_jsonl(path: str | Path, *, objects: Literal[True]) -> Iterator[tuple[int, dict[str, Any]]]: ...
@overload
def read_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[int, Any]]: ...
def read_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[int, Any]]:
    r"""``(line number, value)`` for each non-blank line of a JSON Lines file, read lazily.

    With ``objects=True`` every value must be a JSON object. Raises
    :class:`~toolmend.DatasetError` naming the file (and line) when the file cannot be read, a
    line is not valid JSON (or too deep), or (``objects=True``) a line holds something other
    than an object. Lines end at ``"\n"`` only (see the module docstring).
    """
    p = Path(path)
    try:
        # newline="\n": lines end at "\n" only, untranslated (a "\r" is JSON whitespace).
        handle = p.open(encoding="utf-8-sig", newline="\n")
    except OSError as exc:
        raise _cannot_read(p, exc) from exc
    with handle:
        n = 0
        try:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"not valid JSON ({exc.msg} at column {exc.colno})", path=p, line=n
                    ) from exc
                if objects and not isinstance(record, dict):
                    raise DatasetError(f"expected a JSON object, got {type(record).__name__}", path=p, line=n)
                yield n, record
        except UnicodeDecodeError as exc:
            # The decoder fails on the line after the last one read.
            raise DatasetError(f"not UTF-8 text ({exc.reason})", path=p, line=n + 1) from exc


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


def load_model(cls: type[M], text: str | bytes) -> M:
    """``cls.model_validate_json(text)``; JSON that pydantic's parser refuses (a lone surrogate
    escape, a BOM, nesting it will not follow) is read with :func:`loads` instead, and
    validated as Python data."""
    try:
        return cls.model_validate_json(text)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            raise
        try:
            value = loads(text)
        except ValueError:
            raise exc from None
        # The same reading as model_validate_json, which reads toolmend's {"$ref": ...} back as
        # a call reference (toolmend._schema.REFS; other models ignore the context).
        return cls.model_validate(value, context={"refs": True})


# -- writing ---------------------------------------------------------------------------------------


def dumpb(value: Any, *, indent: int | None = None, sort_keys: bool = False, default: Any = None) -> bytes:
    """``value`` as UTF-8 JSON: compact (``{"a":1}``), or ``indent`` spaces per level; non-ASCII
    characters as they are, lone surrogates escaped, NaN and Infinity as ``null`` (see the module
    docstring). ``default`` turns what JSON has no type for into something it has, as in
    :func:`json.dumps`; without it such a value raises :class:`TypeError`.

    >>> dumpb({"city": "Zürich", "n": [1, 2]}), dumpb({"b": 1, "a": 2}, sort_keys=True)
    (b'{"city":"Z\\xc3\\xbcrich","n":[1,2]}', b'{"a":2,"b":1}')
    """
    if indent is None and not sort_keys:
        option = _ORJSON
    elif indent is None or indent >= 1:
        option = _ORJSON | (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    else:
        option = -1  # an indent orjson does not write
    if option >= 0:
        try:
            text = orjson.dumps(value, default, option)
        except TypeError:  # orjson.JSONEncodeError: what the standard library writes instead
            pass
        else:
            if indent is None or indent == 2:
                return text
            # orjson indents by two spaces only; every other width is its output re-indented
            # (a newline inside a string is escaped, so each raw newline starts a line), several
            # times faster than the standard library's encoder on large files.
            return _INDENT_LINE.sub(lambda m: b"\n" + b" " * (len(m[1]) // 2 * indent), text)
    return _dumps_std(value, indent, sort_keys, default).encode("utf-8")


def dumps(value: Any, *, indent: int | None = None, sort_keys: bool = False, default: Any = None) -> str:
    r""":func:`dumpb` as text.

    >>> print(dumps({"a": [1, float("inf")], "b": "\ud83d"}, indent=2))
    {
      "a": [
        1,
        null
      ],
      "b": "\ud83d"
    }
    """
    return dumpb(value, indent=indent, sort_keys=sort_keys, default=default).decode("utf-8")


def _dumps_std(value: Any, indent: int | None, sort_keys: bool, default: Any) -> str:
    def write(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, allow_nan=False, indent=indent, sort_keys=sort_keys,
                          default=default, separators=(",", ":") if indent is None else (",", ": "))  # fmt: skip

    try:
        try:
            text = write(value)
        except ValueError as exc:
            if "Out of range float" not in str(exc):
                raise
            text = write(_finite(value, default))
    except RecursionError:
        raise DatasetError(f"cannot write JSON nested deeper than {MAX_DEPTH} levels") from None
    return escape_surrogates(text)


def _finite(value: Any, default: Any) -> Any:
    """``value`` with each NaN and infinity as ``None`` (what ``default`` gives first)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v, default) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v, default) for v in value]
    if default is not None and not isinstance(value, str | int | bool | type(None)):
        return _finite(default(value), None)
    return value


def model_json(model: BaseModel, **options: Any) -> str:
    """``model.model_dump_json(**options)`` (pydantic writes NaN as ``null`` too), or the same
    JSON with lone surrogates escaped where pydantic cannot encode them."""
    try:
        return model.model_dump_json(**options)
    except PydanticSerializationError:
        indent = options.pop("indent", None)
        return dumps(model.model_dump(mode="json", **options), indent=indent)


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as its ``\\uXXXX`` JSON escape (apply to JSON
    text only: there a surrogate can only stand inside a string literal)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def printable(value: Any) -> Any:
    """``value`` (JSON-like) with lone surrogates in its strings shown as ``\\uXXXX`` text, for
    printing to a terminal or writing into a report."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v) for v in value]
    return value


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes for hashing; lone surrogates are kept (``surrogatepass``), so
    distinct texts never hash alike."""
    return text.encode("utf-8", "surrogatepass")

"""Reading benchmark data files: JSON and JSON Lines, with errors that name the file and line.

Every loader reads through these so that a bad file fails the same way everywhere: a
:class:`~toolmend.DatasetError` saying which file (and line) and what was expected.

>>> from toolmend._shared import shared_dir
>>> rows = read_jsonl(shared_dir() / "data" / "nestools" / "test_api_ids.jsonl", objects=True)
>>> line, record = next(rows)
>>> line, sorted(record)
(1, ['api_ids', 'test_id'])
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from toolmend._errors import DatasetError

__all__ = [
    "JsonDoc",
    "UniqueIds",
    "check_flat_spec",
    "check_schema",
    "need",
    "read_json",
    "read_json_doc",
    "read_jsonl",
]


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
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise _cannot_read(p, exc) from exc
    except UnicodeDecodeError as exc:
        raise _not_utf8(p, exc) from exc
    try:
        value = json.loads(text)
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
        unique = UniqueIds(self.path, "")
        for key, line in self.items():
            if isinstance(key, str):
                unique.add(key, line, field=key)


def _top_level_items(text: str) -> list[tuple[str | int, int]]:
    # Only called on text that json.loads accepted, so the walk cannot fail.
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


def need(
    value: Any, kind: type | tuple[type, ...], what: str, *, path: Path, line: int | None, field: str
) -> Any:
    """``value`` when it is a ``kind`` (a bool is never an int here), else a
    :class:`~toolmend.DatasetError` at ``path``/``line``/``field`` saying what was expected."""
    if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _types(kind)):
        return value
    got = "null" if value is None else type(value).__name__
    raise DatasetError(f"expected {what}, got {got}", path=path, line=line, field=field)


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def check_schema(schema: Any, *, path: Path, line: int | None, field: str, depth: int = 0) -> None:
    """Check the shape of a JSON-Schema-like parameter schema as tool specs write it: an object
    whose ``type`` is a string (or a list of them), ``description`` a string, ``properties`` an
    object of schemas, ``items`` a schema (or a list of them), ``required`` a list of strings,
    ``enum`` a list, ``additionalProperties`` a boolean or a schema. A wrongly typed field is a
    :class:`~toolmend.DatasetError` naming it; values the shape does not fix are not checked."""
    need(schema, dict, "a schema object", path=path, line=line, field=field)
    if depth > 64:
        return  # deeper than any real spec; the value is taken as it is
    at = f"{field}." if field else ""
    kind = schema.get("type")
    if kind is not None and not (
        isinstance(kind, str) or (isinstance(kind, list) and all(isinstance(k, str) for k in kind))
    ):
        need(kind, str, "a type name (or a list of them)", path=path, line=line, field=f"{at}type")
    for key, types, what in (("description", str, "a string"), ("enum", list, "a list"),
                             ("required", list, "a list of property names")):  # fmt: skip
        if key in schema and schema[key] is not None:
            need(schema[key], types, what, path=path, line=line, field=f"{at}{key}")
    for i, name in enumerate(schema.get("required") or []):
        need(name, str, "a property name", path=path, line=line, field=f"{at}required[{i}]")
    props = schema.get("properties")
    if props is not None:
        need(props, dict, "an object of property schemas", path=path, line=line, field=f"{at}properties")
        for name, sub in props.items():
            check_schema(sub, path=path, line=line, field=f"{at}properties.{name}", depth=depth + 1)
    items = schema.get("items")
    if isinstance(items, list):
        for i, sub in enumerate(items):
            check_schema(sub, path=path, line=line, field=f"{at}items[{i}]", depth=depth + 1)
    elif items is not None:
        check_schema(items, path=path, line=line, field=f"{at}items", depth=depth + 1)
    extra = schema.get("additionalProperties")
    if extra is not None and not isinstance(extra, bool):
        check_schema(extra, path=path, line=line, field=f"{at}additionalProperties", depth=depth + 1)


@overload
def read_jsonl(path: str | Path, *, objects: Literal[True]) -> Iterator[tuple[int, dict[str, Any]]]: ...
@overload
def read_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[int, Any]]: ...
def read_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON Lines file, read lazily.

    With ``objects=True`` every value must be a JSON object. Raises
    :class:`~toolmend.DatasetError` naming the file (and line) when the file cannot be read, a
    line is not valid JSON, or (``objects=True``) a line holds something other than an object.
    Lines end only at line breaks, so a string holding U+2028 does not split a record.
    """
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as exc:
        raise _cannot_read(p, exc) from exc
    with handle:
        n = 0
        try:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
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


class UniqueIds:
    """Remembers where each sample id was first seen; a second line with the same id is a
    :class:`~toolmend.DatasetError` naming both lines (results are keyed by id, so a duplicate
    would silently overwrite its twin)."""

    def __init__(self, path: str | Path, field: str = "id") -> None:
        self.path = Path(path)
        self.field = field
        self.seen: dict[str, int] = {}

    def add(self, sample_id: object, line: int, *, field: str | None = None) -> None:
        """Note ``sample_id`` on ``line`` (``field``: where the id is, if not ``self.field``)."""
        key = str(sample_id)
        first = self.seen.setdefault(key, line)
        if first != line:
            raise DatasetError(
                f"duplicate id {key!r}: also on line {first}",
                path=self.path,
                line=line,
                field=self.field if field is None else field,
            )


def check_flat_spec(
    spec: Any,
    *,
    path: Path,
    line: int | None,
    field: str = "",
    keys: tuple[str, str, str, str, str] = (
        "api_name",
        "api_description",
        "parameters",
        "responses",
        "required",
    ),
) -> None:
    """Check the field types of a tool spec with flat parameter lists (NesTools / Seal-Tools:
    ``api_name``, ``api_description``, ``parameters`` and ``responses`` objects of
    ``{type, description}``, ``required`` a list of names; API-Bank names them ``name``,
    ``description``, ``input_parameters``, ``output_parameters``, and has no ``required``)."""
    name, description, params, returns, required = keys
    at = f"{field}." if field else ""
    need(spec, dict, "a tool spec object", path=path, line=line, field=field or "spec")
    need(spec.get(name), str, "the tool name as a string", path=path, line=line, field=f"{at}{name}")
    if spec.get(description) is not None:
        need(spec[description], str, "a string", path=path, line=line, field=f"{at}{description}")
    for key in (params, returns):
        if spec.get(key) is None:
            continue
        need(spec[key], dict, "an object of parameters", path=path, line=line, field=f"{at}{key}")
        for pname, pspec in spec[key].items():
            where = f"{at}{key}.{pname}"
            need(pspec, dict, "a parameter object", path=path, line=line, field=where)
            for sub in ("type", "description"):
                if pspec.get(sub) is not None:
                    need(pspec[sub], str, "a string", path=path, line=line, field=f"{where}.{sub}")
    if required and spec.get(required) is not None:
        names = need(
            spec[required], list, "a list of parameter names", path=path, line=line, field=f"{at}{required}"
        )
        for i, pname in enumerate(names):
            need(pname, str, "a parameter name", path=path, line=line, field=f"{at}{required}[{i}]")

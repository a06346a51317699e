"""Reading benchmark data files: JSON and JSON Lines, with errors that name the file and line.

Every loader reads through these so that a bad file fails the same way everywhere: a
:class:`~toolmend.DatasetError` saying which file (and line) and what was expected. The readers
themselves are toolmend's one JSON reader (:mod:`toolmend._jsontext`), named here for loaders;
this module adds the checks of field types and ids that benchmark files need.

>>> from toolmend._shared import shared_dir
>>> rows = read_jsonl(shared_dir() / "data" / "nestools" / "test_api_ids.jsonl", objects=True)
>>> line, record = next(rows)
>>> line, sorted(record)
(1, ['api_ids', 'test_id'])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolmend._errors import DatasetError
from toolmend._jsontext import JsonDoc, read_json, read_json_doc, read_jsonl

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


_NOT_NULL = {
    "type": "a type name (or a list of them)",
    "properties": "an object of property schemas",
    "items": "a schema (or a list of them)",
    "additionalProperties": "a boolean or a schema",
    "required": "a list of property names",
    "enum": "a list",
    "description": "a string",
}


def check_schema(schema: Any, *, path: Path, line: int | None, field: str, depth: int = 0) -> None:
    """Check the shape of a JSON-Schema-like parameter schema as tool specs write it: an object
    whose ``type`` is a string (or a list of them), ``description`` a string, ``properties`` an
    object of schemas, ``items`` a schema (or a list of them), ``required`` a list of strings,
    ``enum`` a list, ``additionalProperties`` a boolean or a schema; none of these may be
    ``null``. A wrongly typed field is a
    :class:`~toolmend.DatasetError` naming it; values the shape does not fix are not checked."""
    need(schema, dict, "a schema object", path=path, line=line, field=field)
    if depth > 64:
        return  # deeper than any real spec; the value is taken as it is
    at = f"{field}." if field else ""
    for key, what in _NOT_NULL.items():
        # A null here would load as "no constraint" (a null ``type`` accepts any value, a null
        # ``properties`` declares none) and the sample would be scored against the wrong tool.
        if key in schema and schema[key] is None:
            raise DatasetError(f"expected {what}, got null", path=path, line=line, field=f"{at}{key}")
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

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from toolmend._errors import DatasetError

__all__ = ["read_json", "read_jsonl"]


def _cannot_read(path: Path, exc: OSError) -> DatasetError:
    return DatasetError(f"cannot read: {exc.strerror or exc}", path=path)


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> DatasetError:
    return DatasetError(f"not UTF-8 text ({exc.reason})", path=path)


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path``.

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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=p
        ) from exc


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

    def add(self, sample_id: object, line: int) -> None:
        key = str(sample_id)
        first = self.seen.setdefault(key, line)
        if first != line:
            raise DatasetError(
                f"duplicate id {key!r}: also on line {first}", path=self.path, line=line, field=self.field
            )

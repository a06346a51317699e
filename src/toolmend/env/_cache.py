"""The response cache the environment consults first (CriticTool's "cache retrieval").

Keys are the SHA-256 of canonical JSON — tool name plus arguments with sorted keys and no
whitespace — so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` hit the same entry (StableToolBench
keys on Python's ``repr`` and misses on reordering). An optional ``scope`` string joins the key
for stateful tools: a world passes its state version, so a read after a write is not served a
stale answer. With a ``path`` the cache is a JSON file, written atomically.

>>> cache = ToolCache()
>>> cache.put("weather", {"city": "Oslo"}, {"temp_c": 3})
>>> cache.get("weather", {"city": "Oslo"})
{'temp_c': 3}
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from toolmend._errors import DatasetError
from toolmend._jsontext import dumps, loads, read_text, utf8

__all__ = ["ToolCache", "call_key"]

_MISSING = object()


def call_key(tool: str, arguments: dict[str, Any], scope: str = "") -> str:
    """The canonical key of a call.

    >>> call_key("f", {"a": 1, "b": 2}) == call_key("f", {"b": 2, "a": 1})
    True
    """
    payload = {"tool": tool, "arguments": to_jsonable_python(arguments), "scope": scope}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(utf8(text)).hexdigest()


class ToolCache:
    """Call → response data, in memory and optionally mirrored to a JSON file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0
        if self.path is not None and self.path.exists():
            try:
                loaded = loads(read_text(self.path))
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"not valid JSON ({exc.msg}); expected a cache object of key → response",
                    path=self.path,
                    line=exc.lineno,
                ) from exc
            if not isinstance(loaded, dict):
                raise DatasetError("expected a JSON object of key → response", path=self.path, line=1)
            self._entries = loaded

    def get(self, tool: str, arguments: dict[str, Any], scope: str = "", default: Any = None) -> Any:
        """The cached response data for the call, or ``default``."""
        value = self._entries.get(call_key(tool, arguments, scope), _MISSING)
        if value is _MISSING:
            self.misses += 1
            return default
        self.hits += 1
        return value

    def lookup(self, tool: str, arguments: dict[str, Any], scope: str = "") -> tuple[bool, Any]:
        """``(found, data)``; unlike :meth:`get` it tells a cached ``None`` from a miss."""
        value = self._entries.get(call_key(tool, arguments, scope), _MISSING)
        if value is _MISSING:
            self.misses += 1
            return False, None
        self.hits += 1
        return True, value

    def put(self, tool: str, arguments: dict[str, Any], data: Any, scope: str = "") -> None:
        """Store ``data`` (JSON-compatible) for the call and save the file, if any."""
        self._entries[call_key(tool, arguments, scope)] = to_jsonable_python(data)
        if self.path is not None:
            self.save()

    def save(self) -> None:
        """Write the cache file atomically (temp file + rename): a crash never leaves half a file."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cache-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(dumps(self._entries, sort_keys=True))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return len(self._entries)

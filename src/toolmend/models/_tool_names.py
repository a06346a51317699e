"""Reversible mapping of tool names onto what function-calling APIs accept.

OpenAI-style APIs only take names matching ``^[a-zA-Z0-9_-]{1,64}$``; BFCL and others use
names such as ``math.factorial``. Each invalid character becomes ``_``; a clash with another
tool's name gets a numeric suffix, and an over-long name a hash suffix. The table maps answers
back, so a call to ``math_factorial`` is scored as a call to ``math.factorial``.

>>> names = ToolNameMap(["math.factorial", "math_factorial", "get_weather"])
>>> names.to_wire("math.factorial"), names.to_wire("math_factorial"), names.to_wire("get_weather")
('math_factorial_2', 'math_factorial', 'get_weather')
>>> names.to_original("math_factorial_2")
'math.factorial'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["ToolNameMap"]

_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_MAX = 64


class ToolNameMap:
    """Original tool name ↔ API-safe wire name, built from the tools on offer."""

    def __init__(self, names: Iterable[str]) -> None:
        originals = list(dict.fromkeys(names))
        self._to_wire: dict[str, str] = {}
        self._to_original: dict[str, str] = {}
        # Valid names keep themselves, so that only the invalid ones ever move.
        for name in originals:
            if _VALID.match(name):
                self._bind(name, name)
        for name in originals:
            if name not in self._to_wire:
                self._bind(name, self._fresh(name))

    def _bind(self, original: str, wire: str) -> None:
        self._to_wire[original] = wire
        self._to_original[wire] = original

    def _fresh(self, name: str) -> str:
        base = _INVALID_CHAR.sub("_", name) or "tool"
        if len(base) > _MAX:
            digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
            base = f"{base[: _MAX - 9]}_{digest}"
        candidate, n = base, 2
        while candidate in self._to_original:
            suffix = f"_{n}"
            candidate = base[: _MAX - len(suffix)] + suffix
            n += 1
        return candidate

    @property
    def identity(self) -> bool:
        """True when no name had to change."""
        return all(k == v for k, v in self._to_wire.items())

    def to_wire(self, name: str) -> str:
        """The API-safe name of ``name`` (names not on offer are made safe the same way)."""
        wire = self._to_wire.get(name)
        if wire is not None:
            return wire
        return name if _VALID.match(name) else _INVALID_CHAR.sub("_", name)[:_MAX]

    def to_original(self, wire: str) -> str:
        """The original name behind ``wire``; unknown names (hallucinated tools) come back unchanged."""
        return self._to_original.get(wire, wire)

    def table(self) -> dict[str, str]:
        """The renamed tools only, original → wire."""
        return {k: v for k, v in self._to_wire.items() if k != v}

"""Plug-ins registered by name (benchmarks, backends, strategies, operators).

>>> from toolmend.registry import Registry
>>> colours: Registry[str] = Registry("colour")
>>> @colours.register("red")
... def _red() -> str:
...     return "#f00"
>>> colours.get("red")()
'#f00'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rapidfuzz import process

from toolmend.errors import ConfigError

T = TypeVar("T")

__all__ = ["Registry"]


class Registry(Generic[T]):
    """A name → object table whose unknown-name error lists the known names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers the decorated object under ``name``."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name``; registering a name twice is an error."""
        if name in self._items and self._items[name] is not obj:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj

    def get(self, name: str) -> T:
        """The object registered as ``name``; a :class:`ConfigError` naming the choices otherwise."""
        try:
            return self._items[name]
        except KeyError:
            close = process.extractOne(name, list(self._items))
            hint = f" Did you mean {close[0]!r}?" if close and close[1] >= 60 else ""
            known = ", ".join(sorted(self._items)) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r} (known: {known}).{hint}") from None

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

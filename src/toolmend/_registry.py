"""Plug-ins found by name (benchmarks, model backends, strategies, suites, operators).

A name is registered three ways: with the object itself, lazily as ``"module:attribute"`` (the
module is imported on first use, so a fresh interpreter knows every built-in name without
importing them all), or by a third-party package through a Python entry point in the registry's
group, e.g. in that package's ``pyproject.toml``::

    [project.entry-points."toolmend.models"]
    mybackend = "mypkg.backend:factory"

>>> from toolmend._registry import Registry
>>> colours: Registry[str] = Registry("colour")
>>> @colours.register("red")
... def _red() -> str:
...     return "#f00"
>>> colours.get("red")()
'#f00'
>>> colours.add_lazy("path", "os.path:sep")
>>> colours.names(), colours.get("path")
(['path', 'red'], '/')
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from rapidfuzz import process

from toolmend._errors import ConfigError

T = TypeVar("T")

__all__ = ["Registry", "unknown_name"]

log = logging.getLogger(__name__)


def unknown_name(kind: str, name: str, known: list[str]) -> ConfigError:
    """The error for a name that is none of ``known``, with the closest one as a suggestion.

    >>> str(unknown_name("benchmark", "critc", ["bfcl", "critic", "critictool"]))
    "unknown benchmark 'critc' (known: bfcl, critic, critictool). Did you mean 'critic'?"
    """
    close = process.extractOne(name, known)
    hint = f" Did you mean {close[0]!r}?" if close and close[1] >= 60 else ""
    return ConfigError(f"unknown {kind} {name!r} (known: {', '.join(known) or 'none'}).{hint}")


class Registry(Generic[T]):
    """A name → object table whose unknown-name error lists the known names.

    ``group`` is the entry-point group third parties register in (``toolmend.benchmarks``,
    ``toolmend.models``, ``toolmend.strategies``); it is read once, on the first name not
    registered otherwise, or when every name is listed.
    """

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._entry_points_read = group is None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers the decorated object under ``name``."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name``; registering a name twice is an error (a lazy entry is
        replaced by the object its module registers when it is imported)."""
        if name in self._items and self._items[name] is not obj:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        self._lazy.pop(name, None)

    def add_lazy(self, name: str, target: str) -> None:
        """Register ``name`` as ``"module:attribute"``, imported on first :meth:`get`."""
        if name in self._items or (name in self._lazy and self._lazy[name] != target):
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._lazy[name] = target

    def get(self, name: str) -> T:
        """The object registered as ``name``; a :class:`ConfigError` naming the choices otherwise."""
        if name in self._items:
            return self._items[name]
        if name not in self._lazy:
            self._read_entry_points()
        if name in self._lazy:
            return self._resolve(name)
        raise unknown_name(self.kind, name, self.names())

    def load_all(self) -> None:
        """Import every lazily registered name (e.g. to list what each one is)."""
        self._read_entry_points()
        for name in list(self._lazy):
            self._resolve(name)

    def names(self) -> list[str]:
        """Every registered name, lazy and entry-point ones included, sorted."""
        self._read_entry_points()
        return sorted({*self._items, *self._lazy})

    def _resolve(self, name: str) -> T:
        target = self._lazy[name]
        module, _, attr = target.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{self.kind} {name!r} cannot be loaded from {target}: {exc}") from exc
        # Importing the module may have registered the name already (a decorator): same object.
        self._items.setdefault(name, obj)
        self._lazy.pop(name, None)
        value: T = self._items[name]
        return value

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        assert self.group is not None
        for ep in entry_points(group=self.group):
            if ep.name in self._items or ep.name in self._lazy:
                log.warning(
                    "%s %r from entry point %s is shadowed by a built-in", self.kind, ep.name, ep.value
                )
                continue
            self._lazy[ep.name] = ep.value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name not in self._items and name not in self._lazy:
            self._read_entry_points()
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

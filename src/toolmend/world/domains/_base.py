"""What every domain module shares: the registry, common field types, failure helpers."""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

from pydantic import Field

from toolmend.env._registry import ToolRegistry
from toolmend.env._response import ToolFailed, ToolFailure

__all__ = [
    "WORLD_TOOLS",
    "WRITES",
    "Date",
    "EmailAddress",
    "Limit",
    "Time",
    "city_of",
    "fail",
    "noise",
    "not_found",
]

WORLD_TOOLS = ToolRegistry(inject=frozenset({"state"}))
"""Every tool of the built-in world; each receives the world's state as ``state``."""

WRITES: dict[str, Any] = {"cacheable": False, "side_effects": True}
"""Metadata of tools that change the state: never answered from the cache."""

Date = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date as YYYY-MM-DD.")]
Time = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="A 24-hour time as HH:MM.")]
EmailAddress = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")]
Limit = Annotated[int, Field(ge=1, le=50)]


def fail(kind: str, message: str, status: int = 400, **details: Any) -> NoReturn:
    """Abort the tool with a domain error the environment reports as data."""
    raise ToolFailed(ToolFailure(kind=kind, message=message, status=status, details=details))


def not_found(what: str, key: str) -> NoReturn:
    """Abort with a 404 for an unknown id."""
    fail("not_found", f"no {what} with id {key!r}", status=404)


def city_of(state: Any, name: str) -> Any:
    """The world's city called ``name`` (case-insensitive), or a 404 listing the known cities."""
    for city in state.cities.values():
        if city.name.lower() == name.strip().lower():
            return city
    fail("not_found", f"unknown city {name!r}; known cities: {', '.join(state.cities)}", status=404)


def noise(*parts: object) -> float:
    """A deterministic number in [0, 1) from the given parts (weather, prices that vary by day)."""
    import hashlib

    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:6], "big") / float(1 << 48)

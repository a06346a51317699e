"""The world's tools, one module per domain; importing this package registers them all."""

# Imported for their registrations.
from toolmend.world.domains import (  # noqa: F401
    _calendar,
    _contacts,
    _files,
    _finance,
    _mail,
    _maps,
    _shopping,
    _todo,
    _travel,
    _weather,
)
from toolmend.world.domains._base import WORLD_TOOLS

DOMAINS: tuple[str, ...] = (
    "mail",
    "contacts",
    "calendar",
    "files",
    "weather",
    "maps",
    "finance",
    "travel",
    "shopping",
    "todo",
)
"""Domain names; a tool's domain is the prefix of its name (``shop`` for shopping)."""

__all__ = ["DOMAINS", "WORLD_TOOLS", "domain_of"]


def domain_of(tool_name: str) -> str:
    """The domain a world tool belongs to.

    >>> domain_of("shop_checkout")
    'shopping'
    """
    prefix = tool_name.split("_", 1)[0]
    return "shopping" if prefix == "shop" else prefix

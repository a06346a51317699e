"""The ``train`` extra: fail with one clear line when it is missing, before any work starts."""

from __future__ import annotations

import importlib.util
import sys

from toolmend._errors import ConfigError

__all__ = ["TRAIN_PACKAGES", "require"]

TRAIN_PACKAGES: tuple[str, ...] = ("trl", "datasets", "transformers", "torch", "accelerate")


def require(*packages: str) -> None:
    """Raise :class:`~toolmend._errors.ConfigError` naming the install command when one of
    ``packages`` (default: the whole training stack) cannot be imported.

    >>> require("json")
    """
    # ``sys.modules[name] = None`` is Python's way to block an import; honour it like absence.
    missing = [
        p
        for p in packages or TRAIN_PACKAGES
        if (p in sys.modules and sys.modules[p] is None)
        or (p not in sys.modules and importlib.util.find_spec(p) is None)
    ]
    if missing:
        raise ConfigError(
            f"training needs the 'train' extra ({', '.join(missing)} missing): pip install 'toolmend[train]'"
        )

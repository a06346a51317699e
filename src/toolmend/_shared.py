"""Where the shared benchmark data lives (``../shared`` next to a checkout, or $TOOLMEND_SHARED)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_dir"]


def shared_dir() -> Path:
    """The shared folder: ``$TOOLMEND_SHARED`` when set, else ``../shared`` beside the checkout
    (resolved from the current directory first, then from this source file)."""
    env = os.environ.get("TOOLMEND_SHARED")
    if env:
        return Path(env)
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        candidate = base.parent / "shared"
        if candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared"

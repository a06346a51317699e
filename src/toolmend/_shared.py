"""Where things live: the shared benchmark data (``../shared`` next to a checkout, or
$TOOLMEND_SHARED) and toolmend's own cache folder ($TOOLMEND_CACHE_DIR or ``~/.cache/toolmend``).

Kept free of toolmend imports so that every layer (compare/, models/, benchmarks/) may use it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "shared_dir"]


def shared_dir() -> Path:
    """The shared folder: ``$TOOLMEND_SHARED`` when set, else ``../shared`` beside the checkout
    (resolved from the current directory first, then from this source file)."""
    env = os.environ.get("TOOLMEND_SHARED")
    if env:
        return Path(env)
    # parents[2] of src/toolmend/_shared.py is the checkout root (for editable installs).
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = base.parent / "shared"
        if candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared"


def cache_dir() -> Path:
    """``$TOOLMEND_CACHE_DIR`` when set, else ``~/.cache/toolmend`` (not created here).

    >>> import os
    >>> os.environ["TOOLMEND_CACHE_DIR"] = "/tmp/my-cache"
    >>> cache_dir() / "embeddings.sqlite"
    PosixPath('/tmp/my-cache/embeddings.sqlite')
    """
    env = os.environ.get("TOOLMEND_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toolmend"

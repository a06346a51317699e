"""Where things live: the shared benchmark data (``../shared`` next to a checkout, or
$TOOLMEND_SHARED) and toolmend's own cache folder ($TOOLMEND_CACHE_DIR or ``~/.cache/toolmend``).

Kept free of toolmend imports so that every layer (compare/, models/, benchmarks/) may use it.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["cache_dir", "shared_dir", "source_fingerprint"]

_PACKAGE = Path(__file__).resolve().parent


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


@lru_cache(maxsize=16)
def source_fingerprint(*parts: str) -> str:
    """SHA-256 (16 hex digits) over the source of toolmend's own modules: the ``.py`` files under
    ``parts`` (files or folders relative to the package), or the whole package when none are
    given. Cached results keyed by it — built suites, the checklist critic's replies — are
    never served to code that changed since they were made.

    >>> len(source_fingerprint()), source_fingerprint("check") != source_fingerprint()
    (16, True)
    """
    digest = hashlib.sha256()
    for part in parts or ("",):
        path = _PACKAGE / part
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            name = file.relative_to(_PACKAGE).as_posix().encode()
            digest.update(name + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]

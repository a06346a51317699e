"""The response cache: one SQLite file (a :class:`~toolmend._kvcache.KVCache`: WAL, corruption
recovery, a size bound), safe for concurrent asyncio tasks and processes.

The key is a SHA-256 over canonical JSON of everything that changes an answer — backend, base
URL, model, tool mode, messages, tools, tool choice, generation settings and the epoch (the
sample index, so sampled answers cache apart) — and nothing that does not: API keys,
concurrency, retries and timeouts never reach it. Values are JSON (never pickle). Errors and
empty answers are never stored, so a flaky server cannot poison a later run.

>>> import tempfile
>>> cache = ResponseCache(tempfile.mkdtemp())
>>> cache.stats().entries
0

Location: ``$TOOLMEND_CACHE_DIR``, else ``~/.cache/toolmend`` (see :func:`default_cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from toolmend._jsontext import load_model, model_json, utf8
from toolmend._kvcache import DEFAULT_MAX_BYTES, FILES, KVCache
from toolmend._shared import cache_dir

if TYPE_CHECKING:
    from toolmend.models._base import Completion

__all__ = ["CacheStats", "ResponseCache", "cache_key", "default_cache_dir"]

log = logging.getLogger("toolmend.cache")

_KEY_VERSION = 1
_NAMESPACE = "responses"
_DB_NAME = FILES[_NAMESPACE]


def default_cache_dir() -> Path:
    """``$TOOLMEND_CACHE_DIR`` when set, else ``~/.cache/toolmend`` (toolmend's one cache
    folder, :func:`toolmend._shared.cache_dir`)."""
    return cache_dir()


def cache_key(identity: dict[str, Any], request: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of ``identity`` (which backend) and ``request`` (what was
    asked). Key order and whitespace do not matter; every value does."""
    blob = json.dumps(
        {"v": _KEY_VERSION, "identity": identity, "request": request},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(utf8(blob)).hexdigest()


class CacheStats(BaseModel):
    """What :meth:`ResponseCache.stats` reports."""

    model_config = ConfigDict(extra="forbid")

    path: str
    entries: int
    size_bytes: int
    models: dict[str, int] = Field(default_factory=dict)
    hits: int = 0
    """Hits served by this ``ResponseCache`` object since it was opened."""
    misses: int = 0


class ResponseCache:
    """A persistent map from :func:`cache_key` to a :class:`~toolmend.models.Completion`.

    ``directory`` holds ``responses.sqlite``, a :class:`~toolmend._kvcache.KVCache` (namespace
    ``responses``, bounded by ``max_bytes``); it is created on first use.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        recover: bool = True,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
    ) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / _DB_NAME
        self.recover = recover
        """A corrupt database file is moved aside (``responses.sqlite.corrupt-<time>``, with a
        warning) and a new one started; ``False``: a :class:`ConfigError` instead (``cache stats``)."""
        self.hits = 0
        self.misses = 0
        self._kv = KVCache(self.path, label="response cache", max_bytes=max_bytes, recover=recover)

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, or ``None``."""
        from toolmend.models._base import Completion

        value = self._kv.get(_NAMESPACE, key)
        if value is None:
            self.misses += 1
            log.debug("cache miss %s", key)
            return None
        try:
            completion = load_model(Completion, value)
        except ValueError:
            # A value written by an incompatible version: treat as a miss, the put overwrites it.
            self.misses += 1
            return None
        self.hits += 1
        return completion

    def put(self, key: str, completion: Completion, *, model: str) -> bool:
        """Store ``completion`` under ``key``; empty completions are refused (returns ``False``)."""
        if completion.empty:
            return False
        value = model_json(completion, exclude={"cached", "retries", "latency_s"})
        self._kv.put(_NAMESPACE, key, value, model=model)
        return True

    def stats(self) -> CacheStats:
        """Entry count, size on disk and entries per model."""
        info = self._kv.stats().get(_NAMESPACE)
        return CacheStats(
            path=str(self.path),
            entries=info.entries if info else 0,
            size_bytes=self._kv.size_bytes(),
            models=dict(info.models) if info else {},
            hits=self.hits,
            misses=self.misses,
        )

    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or only ``model``'s); returns how many were deleted. Clearing
        everything deletes the file, so that it works on a corrupt one too."""
        return self._kv.clear(None if model is None else _NAMESPACE, model=model)

    def close(self) -> None:
        """Close the database handle (it reopens on the next use)."""
        self._kv.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

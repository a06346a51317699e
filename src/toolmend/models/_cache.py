"""The response cache: one SQLite file (WAL), safe for concurrent asyncio tasks and processes.

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

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from toolmend._errors import ConfigError
from toolmend._jsontext import load_model, model_json, utf8
from toolmend._shared import cache_dir

if TYPE_CHECKING:
    from toolmend.models._base import Completion

__all__ = ["CacheStats", "ResponseCache", "cache_key", "default_cache_dir"]

log = logging.getLogger("toolmend.cache")

_KEY_VERSION = 1
_DB_NAME = "responses.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_model ON responses(model);
"""


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


_OPEN_TIMEOUT_S = 30.0


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class ResponseCache:
    """A persistent map from :func:`cache_key` to a :class:`~toolmend.models.Completion`.

    ``directory`` holds ``responses.sqlite``; it is created on first use.
    """

    def __init__(self, directory: str | Path | None = None, *, recover: bool = True) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / _DB_NAME
        self.recover = recover
        """A corrupt database file is moved aside (``responses.sqlite.corrupt-<time>``, with a
        warning) and a new one started; ``False``: a :class:`ConfigError` instead (``cache stats``)."""
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._inode: int | None = None

    def _connection(self) -> sqlite3.Connection:
        # One connection per process (a forked child must not reuse its parent's handle); the lock
        # serialises threads, WAL + busy_timeout serialise processes.
        if self._conn is not None and self._pid == os.getpid() and not self._replaced():
            return self._conn
        self._drop()
        try:
            conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not self._corrupt(exc):
                raise ConfigError(f"cannot open the response cache at {self.path}: {exc}") from exc
            self._set_aside(exc)
            conn = self._open()
        self._conn = conn
        self._pid = os.getpid()
        self._inode = self.path.stat().st_ino
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if self.path.is_dir():
                raise ConfigError(f"the response cache {self.path} is a directory, not a database file")
            deadline = time.monotonic() + _OPEN_TIMEOUT_S
            while True:
                conn = sqlite3.connect(
                    self.path, timeout=_OPEN_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                try:
                    return self._prepare(conn)
                except sqlite3.OperationalError as exc:
                    conn.close()
                    # Switching a new file to WAL takes an exclusive lock that SQLite does not wait
                    # for (the busy handler is skipped), so two processes opening a fresh cache at
                    # once can see "database is locked" here: back off and try again.
                    if not _busy(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
                except sqlite3.Error:
                    conn.close()
                    raise
        except OSError as exc:
            raise ConfigError(f"cannot open the response cache at {self.path}: {exc}") from exc

    @staticmethod
    def _prepare(conn: sqlite3.Connection) -> sqlite3.Connection:
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return conn

    def _replaced(self) -> bool:
        # The file deleted (``cache clear`` in another shell, rm -rf) or replaced under an open
        # handle: writes would go to the unlinked file and be lost, so reopen.
        try:
            return self.path.stat().st_ino != self._inode
        except OSError:
            return True

    @staticmethod
    def _corrupt(exc: sqlite3.DatabaseError) -> bool:
        text = str(exc).lower()
        return (
            not isinstance(exc, sqlite3.OperationalError) or "malformed" in text or "not a database" in text
        )

    def _set_aside(self, exc: BaseException) -> None:
        if not self.recover:
            raise ConfigError(
                f"the response cache {self.path} is corrupt ({exc}); remove it with `toolmend cache clear`"
            ) from exc
        aside = self.path.with_name(f"{_DB_NAME}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        log.warning(
            "the response cache %s was corrupt (%s); moved it to %s and started a new one",
            self.path,
            exc,
            aside,
        )
        warnings.warn(
            f"corrupt response cache moved to {aside}; starting a new one", RuntimeWarning, stacklevel=4
        )

    def _drop(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """Run one statement (under the lock); corruption found mid-run is recovered once."""
        with self._lock:
            try:
                return self._connection().execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                if not self._corrupt(exc):
                    raise ConfigError(f"response cache {self.path}: {exc}") from exc
                self._drop()
                self._set_aside(exc)
                return self._connection().execute(sql, args).fetchall()

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, or ``None``."""
        from toolmend.models._base import Completion

        rows = self._run("SELECT value FROM responses WHERE key = ?", (key,))
        row = rows[0] if rows else None
        if row is None:
            self.misses += 1
            log.debug("cache miss %s", key)
            return None
        try:
            completion = load_model(Completion, row[0])
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
        self._run(
            "INSERT OR REPLACE INTO responses (key, model, created, value) VALUES (?, ?, ?, ?)",
            (key, model, time.time(), value),
        )
        return True

    def stats(self) -> CacheStats:
        """Entry count, size on disk and entries per model."""
        if not self.path.exists():
            return CacheStats(
                path=str(self.path), entries=0, size_bytes=0, hits=self.hits, misses=self.misses
            )
        rows = self._run("SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model")
        size = sum(p.stat().st_size for p in self.directory.glob(_DB_NAME + "*") if p.is_file())
        return CacheStats(
            path=str(self.path),
            entries=sum(n for _, n in rows),
            size_bytes=size,
            models={m: n for m, n in rows},
            hits=self.hits,
            misses=self.misses,
        )

    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or only ``model``'s); returns how many were deleted."""
        if not self.path.exists():
            return 0
        if model is None:
            return self._remove()
        with self._lock:
            conn = self._connection()
            deleted = conn.execute("DELETE FROM responses WHERE model = ?", (model,)).rowcount
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return deleted

    def _remove(self) -> int:
        # Clearing everything deletes the files, so that it works on a corrupt database too.
        try:
            entries = self.stats().entries
        except ConfigError:
            entries = 0
        with self._lock:
            self._drop()
            if self.path.is_dir():
                raise ConfigError(f"the response cache {self.path} is a directory, not a database file")
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        return entries

    def close(self) -> None:
        """Close the database handle (it reopens on the next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

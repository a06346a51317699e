"""toolmend's one on-disk cache: SQLite files of namespaced key-value tables.

Every cache toolmend keeps goes through :class:`KVCache` — model answers, sentence embeddings and
model-written checklists — so all of them get the same care:

- **WAL** and ``synchronous=NORMAL``: readers never block the writer, and several processes (a
  bench in one shell, ``toolmend cache stats`` in another) share one file safely;
- **corruption recovery**: a file SQLite cannot read is moved aside (``<name>.corrupt-<time>``,
  with a warning) and a new one started, so a cache never stops a run (``recover=False`` raises
  a :class:`~toolmend.ConfigError` instead, for ``toolmend cache stats``);
- **a size bound**: when the file outgrows ``max_bytes`` the oldest entries go first;
- **namespaces**: each is a table ``(key, model, created, value)``, ``model`` naming who made the
  value (the answering model, the embedding model, the checklist writer), so that
  ``toolmend cache clear --model`` reaches every namespace.

::

    cache = KVCache(cache_dir() / "responses.sqlite", label="response cache")
    cache.put("responses", key, b"...", model="openai/gpt-4o-mini")
    cache.get("responses", key)        # b"..." (or None)
    cache.stats()                      # {"responses": NamespaceStats(entries=1, ...)}

:data:`FILES` lists the files toolmend's own caches use inside its cache folder, one namespace
each, for ``toolmend cache`` to cover them all.

>>> import tempfile, pathlib
>>> kv = KVCache(pathlib.Path(tempfile.mkdtemp()) / "demo.sqlite")
>>> kv.put("greetings", "en", "hello", model="m")
>>> kv.get("greetings", "en")
'hello'
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from toolmend._errors import ConfigError

__all__ = ["DEFAULT_MAX_BYTES", "FILES", "KVCache", "NamespaceStats", "Value"]

log = logging.getLogger("toolmend.cache")

Value = str | bytes
"""What a cache stores: text (JSON, as the caches write it) or bytes (vectors)."""

FILES: dict[str, str] = {
    "responses": "responses.sqlite",
    "embeddings": "embeddings.sqlite",
    "checklists": "hitec_checklists.sqlite",
}
"""Namespace → file name inside toolmend's cache folder, for each cache toolmend keeps."""

DEFAULT_MAX_BYTES = 2 * 1024**3
"""The default bound of one cache file (2 GiB); the oldest entries are evicted beyond it."""

_OPEN_TIMEOUT_S = 30.0
_CHECK_EVERY = 256
"""Writes between two checks of the file's size (a check is two PRAGMAs, but not free)."""
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_COLUMNS = ["key", "model", "created", "value"]
_GET = "SELECT value FROM {t} WHERE key = ?"
_PUT = "INSERT OR REPLACE INTO {t} (key, model, created, value) VALUES (?, ?, ?, ?)"


@dataclass
class NamespaceStats:
    """Entries and bytes (keys plus values) of one namespace, and its entries per model."""

    entries: int = 0
    value_bytes: int = 0
    models: dict[str, int] = field(default_factory=dict)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _corrupt(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return not isinstance(exc, sqlite3.OperationalError) or "malformed" in text or "not a database" in text


class KVCache:
    """One SQLite file of namespaced key-value tables (see the module docstring).

    ``label`` names the cache in warnings and errors ("response cache"); ``max_bytes`` bounds
    the file (``None``: no bound). Safe for threads (one lock) and processes (WAL, a busy
    timeout); a forked child opens its own handle, and a file deleted or replaced under an open
    handle (``toolmend cache clear`` in another shell) is reopened rather than written in vain.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        label: str = "cache",
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        recover: bool = True,
    ) -> None:
        self.path = Path(path).expanduser()
        self.label = label
        self.max_bytes = max_bytes
        self.recover = recover
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._inode: int | None = None
        self._tables: set[str] = set()
        self._sql: dict[tuple[str, str], str] = {}
        self._writes = 0

    # -- the connection --------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid() and not self._replaced():
            return self._conn
        self._drop()
        try:
            conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc):
                raise ConfigError(f"cannot open the {self.label} at {self.path}: {exc}") from exc
            self._set_aside(exc)
            conn = self._open()
        self._conn = conn
        self._pid = os.getpid()
        self._inode = self.path.stat().st_ino
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_dir():
                raise ConfigError(f"the {self.label} {self.path} is a directory, not a database file")
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
            raise ConfigError(f"cannot open the {self.label} at {self.path}: {exc}") from exc

    def _prepare(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # Reading the schema reads the header and the first page: a file that is not a database
        # fails here, where it can be set aside, rather than on the first real query.
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        self._tables = set()
        return conn

    def _table(self, conn: sqlite3.Connection, namespace: str) -> str:
        if namespace in self._tables:
            return namespace
        if not _NAME.fullmatch(namespace):
            raise ConfigError(f"cache namespace {namespace!r}: use lower-case letters, digits and _")
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({namespace})")]
        if columns and columns != _COLUMNS:
            # A table of another layout (an older version's): its entries cannot be read, and
            # a cache may always be emptied.
            log.warning("the %s %s: table %s had another layout; emptied", self.label, self.path, namespace)
            conn.execute(f"DROP TABLE {namespace}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {namespace} "
            "(key TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL, value BLOB NOT NULL)"
        )
        conn.execute(f"CREATE INDEX IF NOT EXISTS {namespace}_model ON {namespace}(model)")
        self._tables.add(namespace)
        return namespace

    def _replaced(self) -> bool:
        try:
            return self.path.stat().st_ino != self._inode
        except OSError:
            return True

    def _set_aside(self, exc: BaseException) -> None:
        if not self.recover:
            raise ConfigError(
                f"the {self.label} {self.path} is corrupt ({exc}); remove it with `toolmend cache clear`"
            ) from exc
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        log.warning("the %s %s was corrupt (%s); moved it to %s and started a new one",
                    self.label, self.path, exc, aside)  # fmt: skip
        warnings.warn(
            f"corrupt {self.label} moved to {aside}; starting a new one", RuntimeWarning, stacklevel=5
        )

    def _drop(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None
        self._tables = set()

    def _run(
        self, namespace: str | None, sql: str, args: Iterable[object] = (), *, many: bool = False
    ) -> list[tuple]:
        """Run one statement (``{t}`` is the namespace's table) under the lock; corruption found
        mid-run is recovered once."""
        with self._lock:
            try:
                return self._execute(namespace, sql, args, many)
            except sqlite3.DatabaseError as exc:
                if not _corrupt(exc):
                    raise ConfigError(f"{self.label} {self.path}: {exc}") from exc
                self._drop()
                self._set_aside(exc)
            try:
                return self._execute(namespace, sql, args, many)
            except sqlite3.DatabaseError as exc:
                raise ConfigError(f"{self.label} {self.path}: {exc}") from exc

    def _execute(self, namespace: str | None, sql: str, args: Iterable[object], many: bool) -> list[tuple]:
        conn = self._connection()
        query = sql
        if namespace is not None:
            if namespace not in self._tables:
                self._table(conn, namespace)
            query = self._sql.get((namespace, sql)) or self._sql.setdefault(
                (namespace, sql), sql.format(t=namespace)
            )
        if not many:
            return conn.execute(query, args).fetchall()  # type: ignore[arg-type]
        conn.execute("BEGIN")
        try:
            conn.executemany(query, args)  # type: ignore[arg-type]
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return []

    # -- the map ---------------------------------------------------------------------------

    def ensure(self, namespace: str) -> None:
        """Create the file and the namespace's table now rather than on first use (so that an
        unusable location shows at once)."""
        self._run(namespace, "SELECT 1 FROM {t} LIMIT 0")

    def get(self, namespace: str, key: str) -> Value | None:
        """The value under ``key``, or ``None``."""
        rows = self._run(namespace, _GET, (key,))
        return rows[0][0] if rows else None

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, Value]:
        """The values of those ``keys`` that are present."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Value] = {}
        for start in range(0, len(wanted), 500):  # SQLite's bound on parameters is 999 in old builds
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._run(
                namespace, f"SELECT key, value FROM {{t}} WHERE key IN ({marks})", chunk
            ):
                found[key] = value
        return found

    def put(self, namespace: str, key: str, value: Value, *, model: str = "") -> None:
        """Store ``value`` under ``key`` (replacing what was there), made by ``model``."""
        self._run(namespace, _PUT, (key, model, time.time(), value))
        self._wrote(namespace, 1)

    def put_many(self, namespace: str, items: Mapping[str, Value], *, model: str = "") -> None:
        """Store every ``key: value`` of ``items`` in one transaction."""
        if not items:
            return
        now = time.time()
        self._run(namespace, _PUT, [(k, model, now, v) for k, v in items.items()], many=True)
        self._wrote(namespace, len(items))

    def _wrote(self, namespace: str, n: int) -> None:
        self._writes += n
        if self.max_bytes is not None and self._writes >= _CHECK_EVERY:
            self._writes = 0
            self._bound(namespace)

    def _bound(self, namespace: str) -> None:
        # Pages in use (the file minus its free list) against the bound; past it, the oldest
        # entries go, a tenth of the namespace at a time, until the rest fits.
        assert self.max_bytes is not None
        for _ in range(20):
            ((pages,),) = self._run(None, "PRAGMA page_count")
            ((free,),) = self._run(None, "PRAGMA freelist_count")
            ((size,),) = self._run(None, "PRAGMA page_size")
            if (pages - free) * size <= self.max_bytes:
                return
            ((entries,),) = self._run(namespace, "SELECT COUNT(*) FROM {t}")
            if not entries:
                return
            # Row ids grow with each write (a replaced entry gets a new one), so the lowest are
            # the oldest: no index on ``created`` to keep up on every write.
            self._run(namespace, "DELETE FROM {t} WHERE rowid IN (SELECT rowid FROM {t} ORDER BY rowid LIMIT ?)",
                      (max(1, entries // 10),))  # fmt: skip

    def namespaces(self) -> list[str]:
        """The namespaces in the file (none when it does not exist)."""
        if not self.path.exists():
            return []
        rows = self._run(None, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [name for (name,) in rows if _NAME.fullmatch(name)]

    def stats(self) -> dict[str, NamespaceStats]:
        """Entries, bytes and entries per model of every namespace in the file."""
        out: dict[str, NamespaceStats] = {}
        for namespace in self.namespaces():
            rows = self._run(namespace, "SELECT model, COUNT(*), SUM(LENGTH(key) + LENGTH(value)) "
                                        "FROM {t} GROUP BY model ORDER BY model")  # fmt: skip
            out[namespace] = NamespaceStats(
                entries=sum(n for _, n, _ in rows),
                value_bytes=sum(b or 0 for _, _, b in rows),
                models={m: n for m, n, _ in rows},
            )
        return out

    def size_bytes(self) -> int:
        """The size of the file on disk, its WAL included."""
        parts = (Path(f"{self.path}{s}") for s in ("", "-wal", "-shm"))
        return sum(p.stat().st_size for p in parts if p.is_file())

    def clear(self, namespace: str | None = None, *, model: str | None = None) -> int:
        """Delete the entries of ``namespace`` (every namespace when ``None``), only ``model``'s
        when given; returns how many. Clearing everything deletes the file itself, so that it
        works on a corrupt file too."""
        if not self.path.exists():
            return 0
        if namespace is None and model is None:
            return self._remove()
        deleted = 0
        for name in [namespace] if namespace is not None else self.namespaces():
            if model is None:
                rows = self._run(name, "SELECT COUNT(*) FROM {t}")
                self._run(name, "DELETE FROM {t}")
                deleted += rows[0][0]
            else:
                rows = self._run(name, "SELECT COUNT(*) FROM {t} WHERE model = ?", (model,))
                self._run(name, "DELETE FROM {t} WHERE model = ?", (model,))
                deleted += rows[0][0]
        self._run(None, "PRAGMA wal_checkpoint(TRUNCATE)")
        return deleted

    def _remove(self) -> int:
        try:
            entries = sum(s.entries for s in self.stats().values())
        except ConfigError:
            entries = 0
        with self._lock:
            self._drop()
            if self.path.is_dir():
                raise ConfigError(f"the {self.label} {self.path} is a directory, not a database file")
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        return entries

    def close(self) -> None:
        """Close the handle (it reopens on the next use)."""
        with self._lock:
            self._drop()

    def __repr__(self) -> str:
        return f"KVCache({str(self.path)!r})"

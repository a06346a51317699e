"""Run directories on disk: ``runs/<timestamp>-<benchmark>-<model>/``.

=================  ==========================================================================
``manifest.json``  what the run is (:class:`~toolmend.runs._manifest.Manifest`), written first
``samples.jsonl``  one :class:`~toolmend.runs._record.SampleRecord` per finished sample, appended,
                   flushed and fsync'd as samples finish; the last record of an id wins
``results.json``   the summary, written (atomically) when the run completes
=================  ==========================================================================

A process killed mid-write (``kill -9``) can leave a torn last line: it has no newline, and
:meth:`RunDir.read_records` drops it (``repair=True`` also truncates it away so that the next
append starts on a clean line). Any other unreadable line is a :class:`~toolmend.DatasetError`
naming the line. :meth:`RunDir.compact` rewrites the file with one line per id.

>>> import tempfile
>>> run = RunDir.create(tempfile.mkdtemp(), Manifest(benchmark="demo", model="scripted"))
>>> with run.writer() as w:
...     w.append(SampleRecord(id="a"))
>>> [r.id for r in run.read_records()]
['a']
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import math
import os
import queue
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from toolmend._errors import ConfigError, DatasetError, first_error
from toolmend._jsontext import dumps, load_model, loads, model_json, read_text
from toolmend.runs._manifest import DatasetInfo, Manifest
from toolmend.runs._record import SampleRecord

__all__ = ["RecordWriter", "RunDir", "atomic_write"]

LOCK = ".lock"
MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
RESULTS = "results.json"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new content, never a mix."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "x"


class RunDir:
    """A run directory (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def samples_path(self) -> Path:
        return self.path / SAMPLES

    @classmethod
    def create(cls, root: str | Path, manifest: Manifest, *, name: str | None = None) -> RunDir:
        """A new directory under ``root`` named ``<UTC timestamp>-<benchmark>-<model>`` (or ``name``),
        with ``manifest.json`` written."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        strategy = f"-{_slug(manifest.strategy)}" if manifest.strategy else ""
        base = name or f"{stamp}-{_slug(manifest.benchmark)}-{_slug(manifest.model)}{strategy}"
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        path, n = root / base, 2
        while True:
            try:
                path.mkdir()
                break
            except FileExistsError:
                path, n = root / f"{base}-{n}", n + 1
        run = cls(path)
        run.write_manifest(manifest)
        return run

    @classmethod
    def open(cls, path: str | Path, *, dataset: str | Path | None = None) -> RunDir:
        """An existing run, to resume or read. With ``dataset``, its content must still match the
        hash in the manifest (a :class:`ConfigError` otherwise)."""
        run = cls(path)
        if not run.path.is_dir():
            raise ConfigError(f"{run.path} is not a run directory")
        if dataset is not None:
            recorded = run.manifest().dataset
            if recorded is not None and DatasetInfo.of(dataset).sha256 != recorded.sha256:
                raise ConfigError(
                    f"{dataset} changed since run {run.path.name} started (sha256 {recorded.sha256[:12]}…); "
                    "start a new run instead of resuming"
                )
        return run

    def write_manifest(self, manifest: Manifest) -> None:
        atomic_write(self.path / MANIFEST, model_json(manifest, indent=2) + "\n")

    def manifest(self) -> Manifest:
        """The run's manifest; a :class:`DatasetError` when missing or unreadable."""
        path = self.path / MANIFEST
        try:
            return load_model(Manifest, read_text(path))
        except OSError as exc:
            raise DatasetError(f"cannot read the manifest: {exc.strerror or exc}", path=path) from exc
        except ValidationError as exc:
            raise DatasetError(f"not a toolmend manifest: {exc.errors()[0]['msg']}", path=path) from exc

    def iter_lines(self, *, repair: bool = False) -> Iterator[tuple[int, str]]:
        """``(line number, text)`` of every complete line of ``samples.jsonl``; a torn last line is
        skipped (and cut off the file when ``repair``)."""
        path = self.samples_path
        if not path.exists():
            return
        with path.open("rb") as f:
            offset = 0
            for n, raw in enumerate(f, 1):
                if not raw.endswith(b"\n"):
                    if repair:
                        with path.open("r+b") as w:
                            w.truncate(offset)
                    return
                offset += len(raw)
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    # Read with replacement characters, an id would match no sample and count twice.
                    raise DatasetError(
                        f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path, line=n
                    ) from None
                if text:
                    yield n, text

    def read_records(self, *, repair: bool = False) -> list[SampleRecord]:
        """The records, one per id (the last one written wins), in the order ids first appeared."""
        latest: dict[str, SampleRecord] = {}
        for n, text in self.iter_lines(repair=repair):
            rec = self.parse_line(n, text)
            latest[rec.id] = rec
        return list(latest.values())

    def parse_line(self, n: int, text: str) -> SampleRecord:
        """Line ``n`` of ``samples.jsonl`` as a record; a :class:`DatasetError` naming the line and
        field when it is none (a score that is NaN or infinite included)."""
        try:
            record = load_model(SampleRecord, text)
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise DatasetError(
                f"not a sample record: {msg}", path=self.samples_path, line=n, field=field or None
            ) from exc
        for key, value in record.scores.items():
            # toolmend writes no NaN (pydantic writes null); one here would poison every mean.
            if value is not None and not math.isfinite(value):
                raise DatasetError(
                    f"a score must be a finite number or null, got {value}",
                    path=self.samples_path,
                    line=n,
                    field=f"scores.{key}",
                )
        return record

    def record_id(self, n: int, text: str) -> str:
        """The ``id`` of line ``n`` of ``samples.jsonl``; a :class:`DatasetError` naming the line
        when it is no JSON object with a string ``id``."""
        try:
            rid = loads(text)["id"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError("not a sample record", path=self.samples_path, line=n) from exc
        if not isinstance(rid, str):
            raise DatasetError(
                f"a sample id must be a string, got {type(rid).__name__}",
                path=self.samples_path,
                line=n,
                field="id",
            )
        return rid

    def iter_records(self) -> Iterator[SampleRecord]:
        """The records one per id (the last one wins), streamed: only the ids are held in memory."""
        last: dict[str, int] = {}
        for n, text in self.iter_lines():
            last[self.record_id(n, text)] = n
        keep = set(last.values())
        for n, text in self.iter_lines():
            if n in keep:
                yield self.parse_line(n, text)

    def compact(self) -> int:
        """Rewrite ``samples.jsonl`` with only the last line of each id; returns the lines dropped.

        Two streaming passes (ids → last line number, then copy), so memory does not grow with the
        size of the records."""
        last: dict[str, int] = {}
        total = 0
        for n, text in self.iter_lines(repair=True):
            total += 1
            rid = self.record_id(n, text)
            last.pop(rid, None)  # re-insert so that order follows the winning line
            last[rid] = n
        keep = set(last.values())
        if len(keep) == total:
            return 0
        tmp = self.samples_path.with_name(f".{SAMPLES}.tmp")
        with tmp.open("w", encoding="utf-8") as out:
            for n, text in self.iter_lines():
                if n in keep:
                    out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.samples_path)
        return total - len(keep)

    def write_results(self, results: dict[str, Any]) -> None:
        atomic_write(self.path / RESULTS, dumps(results, indent=2) + "\n")

    def results(self) -> dict[str, Any] | None:
        """``results.json``, or ``None`` while the run is unfinished."""
        path = self.path / RESULTS
        if not path.exists():
            return None
        try:
            data = loads(read_text(path))
        except ValueError as exc:
            raise DatasetError("results.json is not valid JSON", path=path) from exc
        return data if isinstance(data, dict) else None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run's exclusive lock (``.lock``, with the holder's pid) while writing it.

        A second process gets a :class:`ConfigError` naming the holder instead of appending to
        a file that the first one compacts, which loses records. The lock is the kernel's
        (``flock``): a killed holder releases it.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                raise ConfigError(
                    f"{self.path} is in use by another toolmend process (pid {holder}); "
                    "wait for it to finish or stop it"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the lock

    def writer(self) -> RecordWriter:
        """A :class:`RecordWriter` appending to ``samples.jsonl`` (cut any torn last line first)."""
        self.path.mkdir(parents=True, exist_ok=True)
        for _ in self.iter_lines(repair=True):
            pass
        return RecordWriter(self.samples_path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"


_STOP = object()


class RecordWriter:
    """Appends records from a background thread: each batch of queued lines is written with one
    ``write`` and made durable with one ``fsync`` (group commit), so the event loop never blocks
    on the disk. ``close()`` (or leaving the ``with`` block) waits until everything is on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0
        self._queue: queue.Queue[object] = queue.Queue()
        self._error: BaseException | None = None
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._thread = threading.Thread(target=self._run, name="toolmend-run-writer", daemon=True)
        self._thread.start()

    def append(self, record: SampleRecord) -> None:
        """Queue ``record`` for writing (an error of an earlier write is raised here)."""
        if self._error is not None:
            raise self._error
        self._queue.put((model_json(record) + "\n").encode("utf-8"))

    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            data = b"".join(item for item in batch if isinstance(item, bytes))
            if not data or self._error is not None:
                continue
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
                self.written += sum(1 for item in batch if isinstance(item, bytes))
            except OSError as exc:
                self._error = exc

    def close(self) -> None:
        """Flush, fsync and close; raises the first write error, if any."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
            os.close(self._fd)
        if self._error is not None:
            raise DatasetError(f"cannot write sample records: {self._error}", path=self.path)

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

"""Run progress: a rich bar (ETA, throughput, running score, errors) on a terminal; plain log
lines when output is not a TTY or ``CI`` is set; nothing with ``progress=False``.

>>> import io
>>> p = PlainProgress(stream=io.StringIO(), every_s=0)
>>> p.start(total=2, done=0)
>>> p.update(SampleRecord(id="a", scores={"acc": 1.0}))
>>> "1/2" in p.stream.getvalue()
True
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Protocol

from toolmend.runs._record import SampleRecord
from toolmend.runs._scale import format_pct, to_pct

__all__ = [
    "NoProgress",
    "PlainProgress",
    "Progress",
    "RichProgress",
    "RunningStats",
    "make_progress",
    "show_status",
]


ETA_AFTER = 5
"""Samples to finish before an ETA is shown (the first ones carry start-up costs)."""

STATUS_LOGGER = "toolmend.status"
"""Long preparation steps log here (``preparing: embedding 1200 tools``); a running display shows them."""


_SHOWN: list[_StatusLines] = []
"""Status handlers installed, innermost last: only that one prints (a progress display started
inside a command that shows status lines takes them over, and gives them back when it closes)."""


class _StatusLines(logging.Handler):
    def __init__(self, emit: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._print = emit

    def emit(self, record: logging.LogRecord) -> None:
        if _SHOWN and _SHOWN[-1] is self:
            self._print(record.getMessage())


def _showing_status(emit: Callable[[str], None]) -> _StatusLines:
    handler = _StatusLines(emit)
    logger = logging.getLogger(STATUS_LOGGER)
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    _SHOWN.append(handler)
    return handler


def _hide_status(handler: _StatusLines | None) -> None:
    if handler is not None:
        logging.getLogger(STATUS_LOGGER).removeHandler(handler)
        if handler in _SHOWN:
            _SHOWN.remove(handler)


def show_status(emit: Callable[[str], None]) -> Callable[[], None]:
    """Print the status lines (``preparing: …``) through ``emit`` until the returned function is
    called; a progress display started meanwhile shows them itself.

    >>> import logging
    >>> lines: list[str] = []
    >>> stop = show_status(lines.append)
    >>> logging.getLogger(STATUS_LOGGER).info("preparing: the suite")
    >>> stop()
    >>> lines
    ['preparing: the suite']
    """
    handler = _showing_status(emit)
    return lambda: _hide_status(handler)


class RunningStats:
    """Counters behind every display: done, errors, throughput, the running mean of one score."""

    def __init__(self, score_key: str | None = None) -> None:
        self.score_key = score_key
        self.total: int | None = None
        self.done = 0
        self.new = 0
        self.errors = 0
        self._score_sum = 0.0
        self._score_n = 0
        self._start = time.perf_counter()
        self._first: float | None = None

    def update(self, record: SampleRecord) -> None:
        self.done += 1
        self.new += 1
        if self._first is None:
            self._first = time.perf_counter()
        if record.error is not None:
            self.errors += 1
            return
        if self.score_key is None and record.scores:
            self.score_key = next(iter(record.scores))
        value = record.scores.get(self.score_key) if self.score_key else None
        if value is not None and not math.isnan(value):
            self._score_sum += value
            self._score_n += 1

    @property
    def rate(self) -> float:
        """Samples finished per second in this session."""
        elapsed = time.perf_counter() - self._start
        return self.new / elapsed if elapsed > 0 else 0.0

    @property
    def score(self) -> float | None:
        return self._score_sum / self._score_n if self._score_n else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left, once :data:`ETA_AFTER` samples are done.

        The rate is the session's own (from :meth:`start`-time on, start-up work included),
        unless the rate since the first finished sample is slower: samples that finish in one
        batch (scored together) must not read as "no time left" while most are still to come.
        """
        if self.total is None or self._first is None or self.new < ETA_AFTER:
            return None
        now = time.perf_counter()
        elapsed = now - self._start
        left = self.total - self.done
        since_start = left * elapsed / self.new
        since_first = left * (now - self._first) / (self.new - 1)
        return max(0.0, since_start, since_first)

    def line(self) -> str:
        total = f"/{self.total}" if self.total is not None else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        parts = [f"{self.done}{total} samples{pct}", f"{self.rate:.1f}/s"]
        if self.eta_s is not None:
            parts.append(f"ETA {_clock(self.eta_s)}")
        if self.score is not None:
            parts.append(f"{self.score_key}={format_pct(to_pct(self.score))}%")
        parts.append(f"errors={self.errors}")
        return " · ".join(parts)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress(Protocol):
    """What the runner reports to; implement it to plug in another display."""

    def start(self, total: int | None, done: int) -> None: ...
    def update(self, record: SampleRecord) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    """Shows nothing."""

    def start(self, total: int | None, done: int) -> None:
        return None

    def update(self, record: SampleRecord) -> None:
        return None

    def close(self) -> None:
        return None


class PlainProgress:
    """One log line at most every ``every_s`` seconds, and one at the end (for CI and pipes)."""

    def __init__(
        self, stream: IO[str] | None = None, *, every_s: float = 10.0, score_key: str | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.stats = RunningStats(score_key)
        self._last = 0.0
        self._status: _StatusLines | None = None

    def start(self, total: int | None, done: int) -> None:
        self.stats.total, self.stats.done = total, done
        self._status = _showing_status(self._emit)
        if done:
            self._emit(f"resuming: {done} samples already done")

    def update(self, record: SampleRecord) -> None:
        self.stats.update(record)
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            self._emit(self.stats.line())

    def close(self) -> None:
        _hide_status(self._status)
        self._emit(self.stats.line())

    def _emit(self, text: str) -> None:
        print(f"[toolmend] {text}", file=self.stream, flush=True)


class RichProgress:
    """A rich progress bar on stderr."""

    def __init__(self, *, score_key: str | None = None, description: str = "samples") -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.stats = RunningStats(score_key)
        self._bar = Bar(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task(description, total=None, info="")
        self._status: _StatusLines | None = None

    def start(self, total: int | None, done: int) -> None:
        self.stats.total, self.stats.done = total, done
        self._bar.update(self._task, total=total, completed=done)
        self._status = _showing_status(self._bar.console.print)
        self._bar.start()

    def update(self, record: SampleRecord) -> None:
        self.stats.update(record)
        info = self.stats.line().split(" · ", 1)[-1]
        self._bar.update(self._task, completed=self.stats.done, info=info)

    def close(self) -> None:
        _hide_status(self._status)
        self._bar.stop()


def make_progress(progress: bool | Progress | None = None, *, score_key: str | None = None) -> Progress:
    """``None`` → rich on a terminal, plain under CI or in a pipe; ``True`` → the same; ``False`` →
    nothing; a :class:`Progress` object is used as it is."""
    if progress is None or progress is True:
        plain = bool(os.environ.get("CI")) or not sys.stderr.isatty()
        return PlainProgress(score_key=score_key) if plain else RichProgress(score_key=score_key)
    if progress is False:
        return NoProgress()
    return progress

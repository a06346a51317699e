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

import math
import os
import sys
import time
from typing import IO, Protocol

from toolmend.runs.record import SampleRecord
from toolmend.runs.scale import format_pct, to_pct

__all__ = ["NoProgress", "PlainProgress", "Progress", "RichProgress", "RunningStats", "make_progress"]


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

    def update(self, record: SampleRecord) -> None:
        self.done += 1
        self.new += 1
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
        if self.total is None or not self.rate:
            return None
        return max(0.0, (self.total - self.done) / self.rate)

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

    def start(self, total: int | None, done: int) -> None:
        self.stats.total, self.stats.done = total, done
        if done:
            self._emit(f"resuming: {done} samples already done")

    def update(self, record: SampleRecord) -> None:
        self.stats.update(record)
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            self._emit(self.stats.line())

    def close(self) -> None:
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

    def start(self, total: int | None, done: int) -> None:
        self.stats.total, self.stats.done = total, done
        self._bar.update(self._task, total=total, completed=done)
        self._bar.start()

    def update(self, record: SampleRecord) -> None:
        self.stats.update(record)
        info = self.stats.line().split(" · ", 1)[-1]
        self._bar.update(self._task, completed=self.stats.done, info=info)

    def close(self) -> None:
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

"""What a report shows, computed from run directories: metrics, breakdowns, worst samples.

>>> from toolmend import run_bench
>>> result = run_bench("bfcl", "scripted", categories=["simple_python", "irrelevance"], limit=30,
...                    runs_dir=tmp_path, progress=False)
>>> view = RunView.load(result.run_dir)
>>> view.primary, [g.group for g in view.breakdowns(min_groups=1)["category"]]
('accuracy', ['simple_python'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from toolmend._errors import ToolmendError
from toolmend.benchmarks import benchmark_class
from toolmend.runs import Manifest, SampleRecord, load_run
from toolmend.runs._scale import percent_keys

__all__ = ["GroupRow", "RunView", "load_views"]

_MAX_GROUPS = 40


@dataclass(frozen=True)
class GroupRow:
    """One group of a breakdown: how many samples, and their mean primary score."""

    group: str
    n: int
    mean: float | None


def _declared(manifest: Manifest | None) -> dict[str, Any]:
    """The headline and detail keys a run's manifest records; for runs written before manifests
    held them, those its benchmark declares now (when it is still registered)."""
    if manifest is None:
        return {}
    if manifest.headline is not None:
        return {"headline": manifest.headline, "detail_keys": tuple(manifest.detail_keys)}
    bench = benchmark_class(manifest.benchmark)
    return {} if bench is None else {"headline": bench.headline, "detail_keys": tuple(bench.detail_keys)}


@dataclass
class RunView:
    """One run as a report sees it."""

    name: str
    path: Path
    benchmark: str
    model: str
    mode: str
    metrics: dict[str, float]
    records: list[SampleRecord]
    completed: bool
    label: str = ""
    """How the run is named in comparisons: its model (with the run name when models repeat)."""
    headline: str | None = None
    """The benchmark's headline per-sample score, as its manifest records it."""
    detail_keys: tuple[str, ...] = ()
    """``SampleScore.details`` keys the benchmark declares for breakdowns (from the manifest)."""
    manifest: Manifest | None = None
    percent: set[str] = field(default_factory=set)
    """The :attr:`metrics` already in percent (CriticTool's); per-sample scores never are."""
    planned: int | None = None
    """Samples the run was asked for (``None`` when the manifest does not say)."""
    partial_metrics: bool = False
    """True when :attr:`metrics` were computed over the samples done so far (no ``results.json``)."""

    @classmethod
    def load(cls, path: str | Path) -> RunView:
        """Read a run directory (a finished or an interrupted run)."""
        run = load_run(path)
        config: dict[str, Any] = run.manifest.config if run.manifest else {}
        bench_cfg = config.get("bench") if isinstance(config.get("bench"), dict) else {}
        metrics = dict((run.results or {}).get("metrics") or {})
        benchmark = run.manifest.benchmark if run.manifest else "?"
        mode = str((bench_cfg or {}).get("mode", "compat"))
        partial = run.results is None and any(r.error is None for r in run.records)
        if partial:
            metrics = _aggregate(benchmark, mode, [r for r in run.records if r.error is None])
        values = {k: float(v) for k, v in metrics.items() if isinstance(v, int | float)}
        return cls(
            name=run.path.name,
            path=run.path,
            benchmark=benchmark,
            model=run.manifest.model if run.manifest else "?",
            mode=mode,
            metrics=values,
            records=run.records,
            completed=run.results is not None,
            label=run.manifest.model if run.manifest else run.path.name,
            **_declared(run.manifest),
            manifest=run.manifest,
            percent=percent_keys(benchmark, values),
            planned=run.manifest.n_planned if run.manifest else None,
            partial_metrics=partial,
        )

    @property
    def status(self) -> str:
        """``complete``, ``partial: k of n``, or ``failed: all n samples hit infrastructure errors``."""
        if self.records and not self.scored:
            return f"failed: all {len(self.records)} samples hit infrastructure errors"
        if self.completed and (self.planned is None or len(self.records) >= self.planned):
            return "complete"
        if self.planned is None:
            return f"partial: {len(self.scored)} done (unfinished; total not recorded)"
        return f"partial: {len(self.scored)} of {self.planned}"

    @property
    def retry_command(self) -> str:
        """The command that answers this run's infrastructure errors again."""
        return f"toolmend bench {self.benchmark} --resume {self.path} --retry-errors"

    # Cached: a view is read-only once loaded, and score_of() asks for the primary key once per
    # record (recomputing it walked every record each time: quadratic in the run's size).
    @cached_property
    def scored(self) -> list[SampleRecord]:
        return [r for r in self.records if r.error is None]

    @cached_property
    def failed(self) -> list[SampleRecord]:
        """Samples that ended with an infrastructure error."""
        return [r for r in self.records if r.error is not None]

    @cached_property
    def primary(self) -> str | None:
        """The per-sample score used to rank samples and fill breakdowns: the benchmark's
        headline, else (a run that does not record one) the first score."""
        keys: dict[str, None] = {}
        for r in self.scored:
            keys.update(dict.fromkeys(r.scores))
        if self.headline in keys:
            return self.headline
        return next(iter(keys), None)

    def score_of(self, record: SampleRecord) -> float | None:
        key = self.primary
        value = record.scores.get(key) if key else None
        return None if value is None or math.isnan(value) else float(value)

    def breakdowns(self, min_groups: int = 2) -> dict[str, list[GroupRow]]:
        """``detail key → rows`` for each of :attr:`detail_keys` that splits this run into
        ``min_groups`` to 40 groups (an empty ``error_type`` is the group ``none``: the sample
        passed)."""
        out: dict[str, list[GroupRow]] = {}
        for key in self.detail_keys:
            groups: dict[str, list[float | None]] = {}
            for r in self.scored:
                if key not in r.details:
                    continue
                raw = r.details[key]
                if isinstance(raw, dict | list):
                    continue
                label = "none" if raw in ("", None) else str(raw)
                groups.setdefault(label, []).append(self.score_of(r))
            if not max(1, min_groups) <= len(groups) <= _MAX_GROUPS:
                continue
            rows = []
            for label, values in groups.items():
                known = [v for v in values if v is not None]
                rows.append(GroupRow(label, len(values), sum(known) / len(known) if known else None))
            rows.sort(key=lambda g: (-g.n, g.group) if key == "error_type" else (g.group,))
            out[key] = rows
        return out

    def worst(self, k: int = 10) -> list[SampleRecord]:
        """The ``k`` lowest-scored samples below a perfect 1 (ties keep the run's order)."""
        ranked = [r for r in self.scored if (s := self.score_of(r)) is not None and s < 1.0]
        ranked.sort(key=lambda r: self.score_of(r) or 0.0)
        return ranked[:k]


def _aggregate(benchmark: str, mode: str, records: list[SampleRecord]) -> dict[str, float]:
    """The benchmark's own aggregate over the records done so far; the mean of each score when the
    benchmark is unknown."""
    from toolmend.benchmarks import SampleScore, as_mode

    cls = benchmark_class(benchmark)
    if cls is not None:
        try:
            scores = [SampleScore(id=r.id, values=r.scores, details=r.details) for r in records]
            return dict(cls().aggregate(scores, as_mode(mode)))
        except (ToolmendError, TypeError, ValueError, KeyError, ZeroDivisionError):
            pass  # a benchmark that cannot aggregate a partial set falls back to plain means
    sums: dict[str, list[float]] = {}
    for r in records:
        for k, v in r.scores.items():
            if v is not None and not math.isnan(v):
                sums.setdefault(k, []).append(v)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def load_views(paths: list[str | Path]) -> list[RunView]:
    """Read several runs; models that repeat are labelled with their run names."""
    views = [RunView.load(p) for p in paths]
    models = [v.model for v in views]
    for v in views:
        if models.count(v.model) > 1:
            v.label = f"{v.model} ({v.name})"
    return views

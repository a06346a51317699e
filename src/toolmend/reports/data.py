"""What a report shows, computed from run directories: metrics, breakdowns, worst samples.

>>> view = RunView.load("runs/20250101T000000Z-mybench-scripted")   # doctest: +SKIP
>>> view.primary, [g.group for g in view.breakdowns()["category"]]  # doctest: +SKIP
('accuracy', ['irrelevance', 'simple_python'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from toolmend.benchmarks import BENCHMARKS, SUITES
from toolmend.runs import Manifest, SampleRecord, load_run

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
    name = manifest.benchmark
    if name in SUITES:
        name = SUITES.get(name).benchmark
    if name not in BENCHMARKS:
        return {}
    bench = BENCHMARKS.get(name)
    return {"headline": bench.headline, "detail_keys": tuple(bench.detail_keys)}


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

    @classmethod
    def load(cls, path: str | Path) -> RunView:
        """Read a run directory (a finished or an interrupted run)."""
        run = load_run(path)
        config: dict[str, Any] = run.manifest.config if run.manifest else {}
        bench_cfg = config.get("bench") if isinstance(config.get("bench"), dict) else {}
        metrics = dict((run.results or {}).get("metrics") or {})
        return cls(
            name=run.path.name,
            path=run.path,
            benchmark=run.manifest.benchmark if run.manifest else "?",
            model=run.manifest.model if run.manifest else "?",
            mode=str((bench_cfg or {}).get("mode", "compat")),
            metrics={k: float(v) for k, v in metrics.items() if isinstance(v, int | float)},
            records=run.records,
            completed=run.results is not None,
            label=run.manifest.model if run.manifest else run.path.name,
            **_declared(run.manifest),
        )

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


def load_views(paths: list[str | Path]) -> list[RunView]:
    """Read several runs; models that repeat are labelled with their run names."""
    views = [RunView.load(p) for p in paths]
    models = [v.model for v in views]
    for v in views:
        if models.count(v.model) > 1:
            v.label = f"{v.model} ({v.name})"
    return views

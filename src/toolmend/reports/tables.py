"""The report's content as plain tables, shared by the markdown and HTML writers.

A :class:`Report` is built once from run views; each writer only formats it, so ``report.md``
and ``report.html`` always say the same thing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from toolmend.reports.data import RunView
from toolmend.runs import SampleRecord

__all__ = ["Breakdown", "Report", "WorstSample", "build_report", "format_number"]

Table = tuple[list[str], list[list[str]]]
"""A table as (header, rows) of cell texts."""

_OUTPUT_CHARS = 2000


@dataclass
class Breakdown:
    """A detail key split into groups: rows of ``(group, n per run, mean score per run)``."""

    key: str
    score: str
    groups: list[str]
    n: dict[str, list[int]] = field(default_factory=dict)
    mean: dict[str, list[float | None]] = field(default_factory=dict)


@dataclass
class WorstSample:
    """A low-scored sample with what explains it."""

    run: str
    id: str
    score: float | None
    score_key: str
    facts: dict[str, str]
    outputs: list[str]


@dataclass
class Report:
    """Everything a report shows (see :func:`build_report`)."""

    views: list[RunView]
    metrics: list[str]
    """Metric names in first-seen order over the runs."""
    fraction_metrics: list[str]
    """Metrics in [0, 1] in every run (plotted together)."""
    percent_metrics: list[str]
    """Other metrics in [0, 100] (plotted on their own scale); counts are not plotted."""
    breakdowns: list[Breakdown]
    worst: list[WorstSample]

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.views]

    def value(self, view: RunView, metric: str) -> float | None:
        v = view.metrics.get(metric)
        return None if v is None or math.isnan(v) else v

    def runs_table(self) -> Table:
        """One row per run: what it ran and how far it got."""
        head = ["run", "benchmark", "model", "mode", "samples", "scored", "infra errors", "status"]
        rows = [
            [
                v.name,
                v.benchmark,
                v.model,
                v.mode,
                str(len(v.records)),
                str(len(v.scored)),
                str(len(v.failed)),
                "complete" if v.completed else "unfinished",
            ]
            for v in self.views
        ]
        return head, rows

    def metrics_table(self) -> Table:
        """One row per metric, one column per run."""
        rows = [[m, *(format_number(self.value(v, m)) for v in self.views)] for m in self.metrics]
        return ["metric", *self.labels], rows

    def breakdown_table(self, b: Breakdown) -> Table:
        """One row per group: its sample count and mean score in each run."""
        head = ["group"]
        for label in self.labels:
            head += (
                [f"n ({label})", f"{b.score} ({label})"] if len(self.views) > 1 else ["n", f"mean {b.score}"]
            )
        rows = []
        for g in b.groups:
            row = [g]
            for i in range(len(self.views)):
                row += [str(b.n[g][i]), format_number(b.mean[g][i])]
            rows.append(row)
        return head, rows

    @property
    def failed(self) -> list[tuple[RunView, SampleRecord]]:
        """Samples that failed with an infrastructure error, with their run."""
        return [(v, r) for v in self.views for r in v.failed]

    def failed_table(self, limit: int = 50) -> Table:
        """The first ``limit`` infrastructure errors (run, sample id, message clipped to 200 chars)."""
        rows = [[v.label, r.id, r.error.message[:200] if r.error else ""] for v, r in self.failed[:limit]]
        return ["run", "id", "error"], rows


def format_number(value: float | None) -> str:
    """A metric value as a report shows it: 4 significant digits, an en dash when missing.

    >>> format_number(0.123456), format_number(None)
    ('0.1235', '–')
    """
    return "–" if value is None else f"{value:.4g}"


def _clip(text: str) -> str:
    return text if len(text) <= _OUTPUT_CHARS else text[:_OUTPUT_CHARS] + f"… [{len(text)} chars]"


def build_report(views: list[RunView], *, worst: int = 10) -> Report:
    """Collect metrics, per-group breakdowns (runs side by side) and each run's ``worst`` samples."""
    metrics: list[str] = []
    for v in views:
        metrics.extend(m for m in v.metrics if m not in metrics)
    fraction, percent = [], []
    for m in metrics:
        values = [v.metrics[m] for v in views if m in v.metrics and not math.isnan(v.metrics[m])]
        if not values or m.startswith("n_") or "error" in m:
            continue
        if all(0.0 <= x <= 1.0 for x in values):
            fraction.append(m)
        elif all(0.0 <= x <= 100.0 for x in values):
            percent.append(m)
    breakdowns: dict[str, Breakdown] = {}
    for i, v in enumerate(views):
        # One group in one run is still worth a column when another run splits further.
        for key, rows in v.breakdowns(min_groups=1).items():
            b = breakdowns.setdefault(key, Breakdown(key=key, score=v.primary or "score", groups=[]))
            for row in rows:
                if row.group not in b.groups:
                    b.groups.append(row.group)
                    b.n[row.group] = [0] * len(views)
                    b.mean[row.group] = [None] * len(views)
                b.n[row.group][i] = row.n
                b.mean[row.group][i] = row.mean
    kept = [b for b in breakdowns.values() if len(b.groups) >= 2]
    worst_rows: list[WorstSample] = []
    for v in views:
        for r in v.worst(worst):
            facts: dict[str, str] = {
                k: str(r.details[k])
                for k in ("category", "error_type", "depth", "part", "external_mode", "outcome")
                if k in r.details and r.details[k] not in ("", None)
            }
            if r.details.get("error"):  # BFCL's checker message
                facts["checker"] = str(r.details["error"])[:300]
            if r.findings:
                facts["findings"] = ", ".join(sorted({f.code for f in r.findings}))
            worst_rows.append(
                WorstSample(
                    run=v.label,
                    id=r.id,
                    score=v.score_of(r),
                    score_key=v.primary or "score",
                    facts=facts,
                    outputs=[_clip(o) for o in r.outputs],
                )
            )
    return Report(
        views=views,
        metrics=metrics,
        fraction_metrics=fraction,
        percent_metrics=percent,
        breakdowns=kept,
        worst=worst_rows,
    )

"""Reports over run directories: ``report.md`` and a self-contained ``report.html``.

One run gives its status, provenance, metrics (percentages, one decimal place), breakdowns,
charts and worst samples; several runs are also compared pairwise (Δ with a bootstrap interval, a
paired test, the samples that flipped). The HTML page holds a browser of every sample of every
run (transcripts, tools, gold answers, runs side by side), offline::

    from toolmend.reports import write_report

    files = write_report(["runs/a", "runs/b"], out="reports/")
    files.markdown, files.html
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolmend.errors import ConfigError
from toolmend.reports.data import GroupRow, RunView, load_views
from toolmend.reports.html import render_html
from toolmend.reports.markdown import render_markdown
from toolmend.reports.stats import DeltaCI, PairedTest, bootstrap_ci, paired_test
from toolmend.reports.tables import Breakdown, Comparison, MetricDelta, Report, WorstSample, build_report
from toolmend.runs.store import atomic_write

__all__ = [
    "Breakdown",
    "Comparison",
    "DeltaCI",
    "GroupRow",
    "MetricDelta",
    "PairedTest",
    "Report",
    "ReportFiles",
    "RunView",
    "WorstSample",
    "bootstrap_ci",
    "build_report",
    "load_views",
    "paired_test",
    "render_html",
    "render_markdown",
    "write_report",
]


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`write_report` wrote."""

    markdown: Path
    html: Path


def write_report(
    runs: list[str | Path] | list[Path], *, out: str | Path, worst: int = 10, plots: bool = True
) -> ReportFiles:
    """Write ``report.md`` and ``report.html`` for ``runs`` into ``out`` (created if needed).

    ``worst``: how many lowest-scored samples to show (over all runs); ``plots=False`` leaves the
    figures out (no matplotlib needed).
    """
    if not runs:
        raise ConfigError("a report needs at least one run directory")
    report = build_report(load_views(list(runs)), worst=worst)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    md, html = folder / "report.md", folder / "report.html"
    atomic_write(md, render_markdown(report))
    atomic_write(html, render_html(report, plots=plots))
    return ReportFiles(markdown=md, html=html)

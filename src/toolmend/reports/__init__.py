"""Reports over run directories: ``report.md`` and a self-contained ``report.html``.

One run gives its metrics, per-category and per-error-type breakdowns and its worst-scored
samples with their raw outputs; several runs are compared side by side::

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
from toolmend.reports.tables import Breakdown, Report, WorstSample, build_report
from toolmend.runs.store import atomic_write

__all__ = [
    "Breakdown",
    "GroupRow",
    "Report",
    "ReportFiles",
    "RunView",
    "WorstSample",
    "build_report",
    "load_views",
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

    ``worst``: how many lowest-scored samples to show per run; ``plots=False`` leaves the
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

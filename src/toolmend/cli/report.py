"""``toolmend report``: report.md and a self-contained report.html for one or more runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolmend.cli._console import console, fail
from toolmend.errors import ToolmendError
from toolmend.reports import write_report
from toolmend.runs import RunDir

__all__ = ["register"]


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (several: a side-by-side comparison).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Output folder (default: the run directory, if only one).")
    ] = None,
    worst: Annotated[int, typer.Option("--worst", help="Lowest-scored samples shown per run.", min=0)] = 10,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Leave the figures out.")] = False,
) -> None:
    """Write report.md and report.html (plots inline) for RUN_DIR [RUN_DIR ...]."""
    for path in runs:
        if not path.is_dir():
            fail(f"{path} is not a run directory")
        if not RunDir(path).samples_path.is_file():
            fail(f"{path} is not a run directory: it has no {RunDir(path).samples_path.name}")
    if out is None:
        if len(runs) > 1:
            fail("several runs need --out DIR for the comparison report")
        out = runs[0]
    try:
        files = write_report(list(runs), out=out, worst=worst, plots=not no_plots)
    except ToolmendError as exc:
        fail(str(exc))
    console().print(f"wrote {files.markdown} and {files.html}")


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report_command)

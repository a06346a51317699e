"""``toolmend score``: score saved model outputs against a benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from toolmend._errors import ToolmendError
from toolmend._jsontext import dumps
from toolmend._shared import shared_dir
from toolmend.benchmarks import BENCHMARKS, as_mode
from toolmend.benchmarks._predictions import read_predictions
from toolmend.benchmarks._scoring import ScoreReport, score_predictions
from toolmend.cli._console import console, fail, key_values
from toolmend.runs._scale import format_metric, format_pct, percent_keys, to_pct

__all__ = ["register"]


def _print_report(report: ScoreReport, detail_keys: tuple[str, ...]) -> None:
    out = console()
    table = Table(title=f"{report.benchmark} ({report.mode})", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    percent = percent_keys(report.benchmark, report.metrics)
    for name, value in report.metrics.items():
        table.add_row(name, format_metric(name, value, percent=name in percent, benchmark=report.benchmark))
    out.print(table)
    out.print(f"scored {report.scored} of {report.total} samples")
    _print_worst(report, detail_keys)
    if report.missing:
        head = ", ".join(report.missing[:5]) + (" …" if len(report.missing) > 5 else "")
        out.print(f"{len(report.missing)} samples have no prediction and are not counted: {head}")
    for sid, line in list(report.unknown.items())[:20]:
        out.print(f"line {line}: unknown id {sid!r} (not in the data)")
    for problem in report.problems[:20]:
        out.print(problem)
    hidden = max(0, len(report.unknown) - 20) + max(0, len(report.problems) - 20)
    if hidden:
        out.print(f"… and {hidden} more problems (see --json)")


def _mean(values: dict[str, float | None]) -> float | None:
    vals = [v for v in values.values() if v is not None]
    return sum(vals) / len(vals) if vals else None


def _print_worst(report: ScoreReport, detail_keys: tuple[str, ...], limit: int = 10) -> None:
    """The lowest-scored samples, with the details the benchmark declares for reports."""
    ranked = [(m, s) for s in report.scores if (m := _mean(s.values)) is not None and m < 1.0]
    if not ranked:
        return
    ranked.sort(key=lambda pair: pair[0])
    out = console()
    out.print(f"{len(ranked)} samples below a full score; the lowest:")
    for mean, s in ranked[:limit]:
        reason = "  ".join(f"{k}={s.details[k]}" for k in detail_keys if s.details.get(k) not in (None, ""))
        out.print(f"  {s.id}  {format_pct(to_pct(mean))}  {reason}".rstrip(), markup=False)


def score_command(
    benchmark: Annotated[
        str, typer.Argument(help="Benchmark name, e.g. nestools, critictool, bfcl, reflection-bench.")
    ],
    predictions: Annotated[
        Path, typer.Option("--predictions", "-p", help='JSONL of {"id", "output"} (or "outputs": [...]).')
    ],
    data: Annotated[
        Path | None, typer.Option("--data", help="Benchmark data (file or folder); default: the shared data.")
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="compat (official numbers) or improved.")] = "compat",
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as a JSON object.")] = False,
    missing_as_empty: Annotated[
        bool, typer.Option("--missing-as-empty", help="Score samples without a prediction as empty outputs.")
    ] = False,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Loader option KEY=VALUE (repeatable).")
    ] = None,
) -> None:
    """Score saved model outputs (one JSON line per sample) against BENCHMARK."""
    try:
        mode_ = as_mode(mode)
        bench = BENCHMARKS.get(benchmark)()
        path = data if data is not None else shared_dir() / bench.default_data
        options = key_values(option or [], "--option")
        bench.check_load_options(options)
        samples = bench.load(path, **options)
        preds = read_predictions(predictions)
        report = score_predictions(bench, samples, preds, mode=mode_, missing_as_empty=missing_as_empty)
    except ToolmendError as exc:
        fail(str(exc))
    if as_json:
        payload = report.model_dump(exclude={"scores"})
        typer.echo(dumps(payload, indent=2))
    else:
        _print_report(report, bench.detail_keys)
    if report.scored == 0:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``score`` to ``app``."""
    app.command("score")(score_command)

"""``toolmend bench``: run a model on a benchmark and write a run directory with its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from toolmend.bench import BenchResult, run_bench
from toolmend.benchmarks import as_mode
from toolmend.cli._console import console, fail, key_values
from toolmend.errors import ToolmendError

__all__ = ["register"]


def _categories(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    # Accept both "--categories a --categories b" and "--categories a,b".
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _print_result(result: BenchResult) -> None:
    out = console()
    s = result.summary
    table = Table(title=f"{result.benchmark} · {result.model} ({result.mode})", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in s.metrics.items():
        table.add_row(name, f"{value:.4g}")
    out.print(table)
    out.print(
        f"{s.n_scored} of {s.n_samples} samples scored ({s.new_samples} new), "
        f"infrastructure errors {s.infra_error_rate:.1%}, "
        f"{s.requests} requests ({s.attempts} HTTP attempts), {s.cache_hits} cache hits, {s.retries} retries, "
        f"{s.usage.input_tokens}+{s.usage.output_tokens} tokens, {s.wall_s:.1f} s"
    )
    out.print(f"run: {result.run_dir}")
    if result.report is not None:
        out.print(f"report: {result.report} and {result.report.with_suffix('.html')}")
    hint = result.retry_hint()
    if hint:
        out.print(hint)
    warning = s.infra_warning()
    if warning:
        typer.echo(warning, err=True)


def bench_command(
    benchmark: Annotated[
        str, typer.Argument(help="Benchmark or suite: nestools, critictool, bfcl, reflection-bench, …")
    ],
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", help="openai/<model>, hf/<path>, vllm/<path>, replay/<file>, or scripted (gold)."
        ),
    ] = None,
    data: Annotated[
        Path | None, typer.Option("--data", help="Benchmark data (default: the shared data).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N samples.", min=1)] = None,
    max_connections: Annotated[
        int, typer.Option("--max-connections", help="Requests (and samples) in flight.", min=1)
    ] = 16,
    seed: Annotated[int, typer.Option("--seed", help="Seed for data building and sampling.")] = 0,
    mode: Annotated[str, typer.Option("--mode", help="compat (official numbers) or improved.")] = "compat",
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server URL.")] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = None,
    tool_mode: Annotated[
        str,
        typer.Option(
            "--tool-mode", help="prompt (tools in the benchmark's prompt) or native (function calling)."
        ),
    ] = "prompt",
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the response cache.")
    ] = False,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="Response cache folder.")] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue this run directory (its settings are reused).")
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="With --resume: rerun samples that failed on infrastructure."),
    ] = False,
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="Where new run directories go.")] = Path(
        "runs"
    ),
    samples: Annotated[
        int, typer.Option("--samples", help="Generations per sample (Repair@N on reflection-bench).", min=1)
    ] = 1,
    categories: Annotated[
        list[str] | None, typer.Option("--categories", help="BFCL categories (repeat or comma-separate).")
    ] = None,
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None,
    max_retries: Annotated[
        int | None, typer.Option("--max-retries", help="Transport retries per request.", min=0)
    ] = None,
    model_option: Annotated[
        list[str] | None, typer.Option("--model-option", "-M", help="Backend option KEY=VALUE (repeatable).")
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Loader option KEY=VALUE (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as a JSON object.")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip report.md / report.html.")] = False,
    prompt_template: Annotated[
        Path | None,
        typer.Option(
            "--prompt-template", help="Your own prompt (see toolmend.benchmarks.templates for each format)."
        ),
    ] = None,
) -> None:
    """Run MODEL on BENCHMARK: generate, parse, score, write a run directory and print the metrics."""
    if tool_mode not in ("prompt", "native"):
        fail(f"--tool-mode must be prompt or native, got {tool_mode!r}")
    if retry_errors and resume is None:
        fail("--retry-errors needs --resume RUN_DIR")
    try:
        result = run_bench(
            benchmark,
            model,
            data=data,
            limit=limit,
            max_connections=max_connections,
            seed=seed,
            mode=as_mode(mode),
            base_url=base_url,
            api_key_env=api_key_env,
            tool_mode="native" if tool_mode == "native" else "prompt",
            cache=not no_cache,
            cache_dir=cache_dir,
            resume=resume,
            retry_errors=retry_errors,
            runs_dir=runs_dir,
            samples=samples,
            categories=_categories(categories),
            temperature=temperature,
            max_retries=max_retries,
            load_options=key_values(option or [], "--option"),
            model_options=key_values(model_option or [], "--model-option"),
            report=not no_report,
            prompt_template=prompt_template,
        )
    except ToolmendError as exc:
        fail(str(exc))
    if as_json:
        payload = {
            "run_dir": str(result.run_dir),
            "benchmark": result.benchmark,
            "model": result.model,
            "mode": result.mode,
            **result.summary.model_dump(mode="json"),
        }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        for line in (result.retry_hint(), result.summary.infra_warning()):
            if line:
                typer.echo(line, err=True)
    else:
        _print_result(result)
    if result.summary.n_scored == 0:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``bench`` to ``app``."""
    app.command("bench")(bench_command)

"""``toolmend bench``: run a model on a benchmark and write a run directory with its report."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.table import Table

from toolmend._bench import DATA_SEED, BenchInterrupted, BenchResult, run_bench
from toolmend._errors import OptionError, ToolmendError
from toolmend._jsontext import dumps
from toolmend.benchmarks import benchmark_class
from toolmend.cli._console import command_seconds, console, fail, key_values
from toolmend.reports import write_report
from toolmend.runs import RunDir, load_run
from toolmend.runs._progress import show_status
from toolmend.runs._scale import format_metric, percent_keys

__all__ = ["register"]


def _categories(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    # Accept both "--categories a --categories b" and "--categories a,b".
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _base_urls(values: list[str] | None) -> str | list[str] | None:
    """One ``--base-url`` as the string it always was; several (replicas) as a list."""
    if not values:
        return None
    return values[0] if len(values) == 1 else list(values)


def _causes(result: BenchResult) -> str:
    """``infrastructure errors by cause: HTTP 500 ×2, timed out after 5 s ×1``."""
    counts = Counter(r.error.cause for r in load_run(result.run_dir).records if r.error is not None)
    return "infrastructure errors by cause: " + ", ".join(f"{c} ×{n}" for c, n in counts.most_common())


def _oracle_note(result: BenchResult) -> str | None:
    bench = benchmark_class(result.benchmark)
    ceiling = bench.gold_ceiling if bench is not None else None
    if result.model == "scripted" and result.mode == "compat" and ceiling:
        return (
            f"note: --model scripted answers with the gold replies, yet {result.benchmark}'s official "
            f"scorer (compat mode) does not give them 100%: {ceiling}. That is the scorer's ceiling, not a fault"
        )
    return None


def footer(result: BenchResult, wall_s: float) -> str:
    """The line under the metrics table: samples, errors, what the model was asked and how,
    tokens, and the command's wall time (the samples' own time beside it).

    A model that answers in this process (the checklist critic) made no HTTP request: its
    answers are *replies*, those computed in this run and those served from the cache, and
    neither attempts nor retries are spoken of.
    """
    s = result.summary
    head = (
        f"{s.n_scored} of {s.n_samples} samples scored ({s.new_samples} new), "
        f"infrastructure errors {s.infra_error_rate:.1%}, "
    )
    if result.in_process:
        asked = f"{s.requests - s.cache_hits} replies computed here (no HTTP), {s.cache_hits} from the cache"
    else:
        asked = f"{s.requests} requests ({s.attempts} HTTP attempts), {s.cache_hits} cache hits, {s.retries} retries"
    timing = f"{wall_s:.1f} s (samples {s.wall_s:.1f} s)"
    return f"{head}{asked}, {s.usage.input_tokens}+{s.usage.output_tokens} tokens, {timing}"


def _print_result(result: BenchResult, report: Path | None, wall_s: float) -> None:
    out = console()
    s = result.summary
    strategy = result.settings.strategy if result.settings else "none"
    title = f"{result.benchmark} · {result.model}" + (f" · {strategy}" if strategy != "none" else "")
    table = Table(title=f"{title} ({result.mode})", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    percent = percent_keys(result.benchmark, s.metrics)
    for name, value in s.metrics.items():
        table.add_row(name, format_metric(name, value, percent=name in percent, benchmark=result.benchmark))
    out.print(table)
    out.print(footer(result, wall_s))
    out.print(f"run: {result.run_dir}")
    if report is not None:
        out.print(f"report: {report} and {report.with_suffix('.html')}")
    hint = result.retry_hint()
    if hint:
        out.print(hint)
        out.print(_causes(result))
    warning = s.infra_warning()
    if warning:
        typer.echo(warning, err=True)
    note = _oracle_note(result)
    if note:
        out.print(note)


FLAGS = {"benchmark": "BENCHMARK"}
"""Parameters of run_bench that are no flag here (the rest: :func:`toolmend._errors.flag_of`)."""


def _write_report(run_dir: Path) -> Path:
    """Write the run's report; a Ctrl-C meanwhile waits until it is written, then stops (130)."""
    stop: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return write_report([run_dir], out=run_dir).markdown
    previous = signal.signal(signal.SIGINT, lambda signum, frame: stop.append(signum))
    try:
        report = write_report([run_dir], out=run_dir).markdown
    finally:
        signal.signal(signal.SIGINT, previous)
    if stop:
        typer.echo(
            f"interrupted after the last sample; the run is complete and its report is written: {report}",
            err=True,
        )
        raise typer.Exit(130)
    return report


def _after_interrupt(exc: BenchInterrupted, no_report: bool) -> NoReturn:
    """Ctrl-C: the run stops (the library printed how to resume it). If every sample was already
    answered, the run is finished and reported instead, and the user is told so."""
    run = RunDir(exc.run_dir)
    manifest = run.manifest()
    done = run.results() is not None
    if not done and manifest.n_planned is not None:
        try:
            finished = len({r.id for r in run.iter_records()}) >= manifest.n_planned
        except ToolmendError:
            finished = False
        if finished:  # stopped while closing: resuming answers nothing and writes the results
            try:
                run_bench(exc.benchmark, resume=exc.run_dir)
                done = True
            except ToolmendError as why:
                typer.echo(f"every sample is answered, but the run could not be closed: {why}", err=True)
            except KeyboardInterrupt:
                pass
    if done:
        where = "" if no_report else f"; report: {_write_report(exc.run_dir)}"
        typer.echo(f"interrupted after the last sample: the run is complete{where}", err=True)
    raise typer.Exit(130)


def bench_command(
    benchmark: Annotated[
        str | None,
        typer.Argument(
            help="A benchmark or suite (toolmend --help lists them), e.g. critic, bfcl; "
            "with --resume, the run's own by default."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="openai/<model>, hf/<path>, vllm/<path>, replay/<file>, checklist (rule-based CriticTool critic), "
            "or scripted (gold).",
        ),
    ] = None,
    data: Annotated[
        Path | None, typer.Option("--data", help="Benchmark data (default: the shared data).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N samples.", min=1)] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            "--max-connections",
            help="Requests (and samples) in flight (default: 16, or 4 for a server on this machine, "
            "which often generates one answer at a time).",
            min=1,
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Seed sent with every generation (each of --samples its own, derived from it) and "
            "used for data building and shuffles. Default: no seed is sent; data use seed 0.",
        ),
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="compat (official numbers) or improved.")] = "compat",
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible server URL; repeat it for replicas of one model (requests go to "
            "the least busy one, --max-connections each; a failed one is taken out and its requests "
            "retried on another).",
        ),
    ] = None,
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
    temperature: Annotated[
        float | None,
        typer.Option("--temperature", help="Sampling temperature (default: the backend's; 0 for openai/)."),
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option("--max-retries", help="Transport retries per request.", min=0)
    ] = None,
    model_option: Annotated[
        list[str] | None,
        typer.Option(
            "--model-option",
            "-M",
            help="Backend option KEY=VALUE (repeatable), e.g. "
            "max_tokens=256, tool_choice=auto, context_length=8192 for openai/.",
        ),
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Loader option KEY=VALUE (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as a JSON object.")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip report.md / report.html.")] = False,
    prompt_template: Annotated[
        Path | None,
        typer.Option(
            "--prompt-template", help="Your own prompt (see toolmend.benchmarks._templates for each format)."
        ),
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help="Inference-time strategies: none, guard, hitec-icl, reflect, self-refine, best-of-n, "
            "env-policy; a+b applies a then b (default: none).",
        ),
    ] = None,
    max_refine: Annotated[
        int | None, typer.Option("--max-refine", help="self-refine: at most N refinement rounds (default 3).")
    ] = None,
    strategy_option: Annotated[
        list[str] | None,
        typer.Option("--strategy-option", "-S", help="Strategy option KEY=VALUE (repeatable), e.g. n=5."),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="Fault schedule for world and the BFCL multi-turn categories: none, light, heavy, or a JSON file; = -o faults=…",
        ),
    ] = None,
    trials: Annotated[
        int | None,
        typer.Option("--trials", help="Runs per task, for pass^k and pass@k; = -o trials=N.", min=1),
    ] = None,
    audit: Annotated[
        bool,
        typer.Option(
            "--audit", help="Audit the benchmark's tasks (passable? unambiguous?) instead of a run."
        ),
    ] = False,
) -> None:
    """Run MODEL on BENCHMARK: generate, parse, score, write a run directory and print the metrics."""
    began = time.perf_counter()
    load_options = key_values(option or [], "--option")
    # Shorthands for load options (so they are in the run's settings and identity); a benchmark
    # that does not take them says so.
    for name, value in {"faults": faults, "trials": trials}.items():
        if value is not None:
            load_options[name] = value
    if audit:
        if benchmark is None:
            fail("--audit needs a BENCHMARK")
        _audit(benchmark, data, DATA_SEED if seed is None else seed, as_json)
        return
    model_options = key_values(model_option or [], "--model-option")
    strategy_options = {
        **key_values(strategy_option or [], "--strategy-option"),
        **({"max_refine": max_refine} if max_refine is not None else {}),
    }
    # Only what was given: a resume reuses the rest from the run (run_bench refuses a change).
    given: dict[str, Any] = {
        "data": data, "limit": limit, "seed": seed, "base_url": _base_urls(base_url), "api_key_env": api_key_env,
        "cache_dir": cache_dir, "resume": resume, "categories": _categories(categories),
        "temperature": temperature, "max_retries": max_retries, "load_options": load_options or None,
        "model_options": model_options or None, "prompt_template": prompt_template, "strategy": strategy,
        "strategy_options": strategy_options or None,
    }  # fmt: skip
    options = {k: v for k, v in given.items() if v is not None}
    # Flags given their default value are left out too, so that a resume does not see them as changes.
    flags: list[tuple[str, Any, Any]] = [
        ("mode", mode, "compat"), ("tool_mode", tool_mode, "prompt"), ("samples", samples, 1),
        ("max_connections", max_connections, None), ("retry_errors", retry_errors, False),
        ("runs_dir", runs_dir, Path("runs")), ("cache", not no_cache, True),
    ]  # fmt: skip
    for key, value, default in flags:
        if value != default:
            options[key] = value
    # Status lines from the first second: building a suite or loading the embedding model comes
    # before the first sample, and the progress display only starts with the samples.
    err = console(stderr=True)
    stop_status = show_status(lambda line: err.print(f"[toolmend] {line}", markup=False, highlight=False))
    started: list[BenchInterrupted] = []
    try:
        try:
            result = run_bench(benchmark, model, progress=True, on_start=started.append, **options)
        finally:
            stop_status()
        if not no_report and not as_json:
            err.print("[toolmend] writing the report", markup=False, highlight=False)
        report = None if no_report else _write_report(result.run_dir)
    except OptionError as exc:
        fail(exc.spelled(FLAGS))
    except BenchInterrupted as exc:
        _after_interrupt(exc, no_report)
    except KeyboardInterrupt:
        if not started:
            raise
        # Ctrl-C as the run returned, or while the display closed or the report was being written:
        # the run is complete, so its report is written all the same.
        _after_interrupt(started[0], no_report)
    except ToolmendError as exc:
        fail(str(exc))
    if as_json:
        payload = {
            "run_dir": str(result.run_dir),
            "benchmark": result.benchmark,
            "model": result.model,
            "mode": result.mode,
            "settings": result.settings.model_dump(mode="json") if result.settings else None,
            **result.summary.model_dump(mode="json"),
        }
        typer.echo(dumps(payload, indent=2))
        hint = result.retry_hint()
        if hint:
            typer.echo(hint, err=True)
            typer.echo(_causes(result), err=True)
        warning = result.summary.infra_warning()
        if warning:
            typer.echo(warning, err=True)
        note = _oracle_note(result)
        if note:
            typer.echo(note, err=True)
    else:
        _print_result(result, report, command_seconds(began))
    if result.summary.n_scored == 0:
        raise typer.Exit(1)


def _audit(benchmark: str, data: Path | None, seed: int, as_json: bool) -> None:
    """Run the benchmark's own task audit (a benchmark offers one with an ``audit(data, seed)``
    method returning a report with ``ok`` and ``issues``)."""
    cls = benchmark_class(benchmark)
    run_audit = getattr(cls, "audit", None) if cls is not None else None
    if cls is None or not callable(run_audit):
        fail(f"{benchmark} has no task audit")
    try:
        report = run_audit(cls(), data, seed)
    except ToolmendError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(dumps(report.model_dump(mode="json"), indent=2))
    else:
        out = console()
        out.print(report.summary())
        if report.issues:
            fields = list(type(report.issues[0]).model_fields)
            table = Table(show_header=True)
            for column in fields:
                table.add_column(column)
            for issue in report.issues:
                table.add_row(*(str(getattr(issue, f)) for f in fields))
            out.print(table)
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``bench`` to ``app``."""
    app.command("bench")(bench_command)

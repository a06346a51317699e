"""Real models on this CPU: a local model on BFCL categories, the world benchmark or the critic
suite, with each recovery strategy. REAL MODEL: every reply is the model's own (no simulation),
through the real runner (``run_bench``); only ``--simulation`` rows come from the ``noisy/`` model.

    .venv/bin/python benchmarks/real_models.py [--benchmark bfcl|world|critic]
        [--model local/smollm2-135m] [--limit 20]
        [--categories simple_python,multiple,parallel,irrelevance] [--tool-mode native]
        [--strategies none,guard,self-refine:when=findings] [--seeds 0] [--temperature 0]
        [-M tool_choice=required] [-M n_threads=1] [-o tools=domain -o faults=light]
        [--recovery] [--simulation noisy/scripted --noise 0.3]

One row per category (BFCL; the world benchmark and the critic suite have one group) and strategy:
the benchmark's headline scores (BFCL's compat accuracy; the world's success and state; the
critic suite's detect, category, tool and args), the samples the strategy fixed and broke against
the first strategy, requests and output tokens per sample, and wall seconds per sample.
``--temperature 0`` (the default) is greedy, one run per cell; with a temperature above 0, each
seed is a run and the cell shows the mean ± the spread (max − min) over the seeds. A strategy's
options follow a colon (``self-refine:when=findings`` is ``--strategy self-refine -S when=findings``).

``--recovery`` adds a table per finding code over the runs just made: the guard's telemetry (turns
in which the checker found the code; fixed by repair alone, recovered after a re-ask, given up)
and, over the samples where the guard found it, how many each strategy's run scored right.
``--simulation MODEL`` makes the same runs with a simulated model (``noisy/scripted``) and prints
its recovery table beside, labelled SIMULATION.

The tables are printed as Markdown with the command, the machine and the date; ``--out`` also
writes them to a file. Run directories stay under ``--runs-dir`` for ``toolmend report``.
``-M KEY=VALUE`` is a backend option and ``-o KEY=VALUE`` a loader option, as for ``toolmend
bench`` (``-M tool_choice=required``: every reply opens with a call, which a model that answers in
prose needs for its calls to be measured at all).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shlex
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolmend import run_bench
from toolmend._shared import shared_dir
from toolmend.runs import RunDir, SampleRecord
from toolmend.strategies._metrics import recovery_by_code

# Per benchmark: the record score that makes a sample "right", and the summary metrics shown
# (column, key, scale to percent).
METRICS: dict[str, tuple[str, list[tuple[str, str, float]]]] = {
    "bfcl": ("accuracy", [("accuracy %", "overall_sample_weighted", 100.0)]),
    "world": ("success", [("success %", "success", 100.0), ("state %", "state", 100.0)]),
    "critic": (
        "tool",
        [
            ("detect %", "detect", 1.0),
            ("category %", "category", 1.0),
            ("tool %", "tool", 1.0),
            ("args %", "args", 1.0),
        ],
    ),  # fmt: skip
}


@dataclass
class Cell:
    metrics: dict[str, float]
    correct: set[str]
    requests: float
    output_tokens: float
    seconds: float
    run_dir: Path
    records: list[SampleRecord] = field(default_factory=list)


def parse_strategy(spec: str) -> tuple[str, dict[str, object]]:
    """``name`` or ``name:key=value,key=value`` → (name, options).

    >>> parse_strategy("self-refine:when=findings,max_refine=2")
    ('self-refine', {'when': 'findings', 'max_refine': 2})
    """
    name, _, rest = spec.partition(":")
    options: dict[str, object] = {}
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition("=")
        options[key] = int(value) if value.isdigit() else value
    return name, options


def split_strategies(text: str) -> list[str]:
    """The ``--strategies`` list: commas separate strategies, and the options of one.

    >>> split_strategies("none,hitec-icl:keep=findings,second_round=false,guard")
    ['none', 'hitec-icl:keep=findings,second_round=false', 'guard']
    """
    return re.split(r",(?=[\w+-]+(?:[:,]|$))", text)


def option_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings → a dict, whole numbers as ints.

    >>> option_pairs(["n_threads=1", "tool_choice=required"])
    {'n_threads': 1, 'tool_choice': 'required'}
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = int(value) if value.isdigit() else value
    return out


def run_cell(
    args: argparse.Namespace, group: str, strategy: str, seed: int, model: object, runs_dir: Path
) -> Cell:
    name, options = parse_strategy(strategy)
    extra: dict[str, Any] = {}
    if args.benchmark == "bfcl":
        extra.update(data=args.data or shared_dir() / "data" / "bfcl", categories=[group])
    elif args.data is not None:
        extra.update(data=args.data)
    start = time.perf_counter()
    result = run_bench(
        args.benchmark,
        model,  # type: ignore[arg-type]
        limit=args.limit,
        tool_mode=args.tool_mode,
        strategy=None if name == "none" else name,
        strategy_options=options,
        temperature=args.temperature,
        seed=seed,
        runs_dir=runs_dir,
        cache=False,
        max_connections=args.batch,
        load_options=option_pairs(args.option),
        model_options=getattr(args, "model_options", {}),
        progress=False,
        **extra,
    )
    seconds = time.perf_counter() - start
    return cell_of(result.run_dir, METRICS[args.benchmark][0], seconds)


def cell_of(run_dir: Path, key: str, seconds: float | None = None) -> Cell:
    """The cell of one run directory (``key``: the record score that makes a sample right);
    ``seconds``: the run's wall time (default: the one its results recorded)."""
    run = RunDir.open(run_dir)
    records = run.read_records()
    results = run.results() or {}
    n = max(len(records), 1)
    return Cell(
        metrics=dict(results.get("metrics") or {}),
        correct={r.id for r in records if (r.scores or {}).get(key) == 1.0},
        requests=sum(r.requests for r in records) / n,
        output_tokens=sum(r.usage.output_tokens for r in records) / n,
        seconds=(seconds if seconds is not None else float(results.get("wall_s") or 0.0)) / n,
        run_dir=run_dir,
        records=records,
    )


def strategy_label(config: dict[str, Any]) -> str:
    """A run's strategy as this script names it (``self-refine:when=findings``).

    >>> strategy_label({"strategy": "self-refine", "strategy_options": {"when": "findings"}})
    'self-refine:when=findings'
    """
    name = config.get("strategy") or "none"
    options = config.get("strategy_options") or {}
    return name + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")


def cells_from_runs(root: Path) -> dict[tuple[str, str, str, float], dict[str, list[Cell]]]:
    """The run directories under ``root`` (e.g. a table whose command was stopped), as cells:
    (model, benchmark, group, temperature) → strategy → one cell per seed, in the order run."""
    out: dict[tuple[str, str, str, float], dict[str, list[Cell]]] = {}
    for manifest in sorted(root.rglob("manifest.json")):
        run_dir = manifest.parent
        if not (run_dir / "results.json").is_file():
            continue  # stopped before it finished
        info = RunDir.open(run_dir).manifest()
        config = info.config["bench"]
        benchmark = info.benchmark if info.benchmark in METRICS else "critic"
        group = ",".join(config.get("categories") or []) or benchmark
        key = (info.model, benchmark, group, float(config.get("temperature") or 0.0))
        cell = cell_of(run_dir, METRICS[benchmark][0])
        out.setdefault(key, {}).setdefault(strategy_label(config), []).append(cell)
    return out


def fmt(values: Sequence[float | None], scale: float = 1.0, digits: int = 1) -> str:
    """One value, or the mean ± the spread (max − min) of several; ``–`` where none is known.

    >>> fmt([0.5], 100), fmt([0.4, 0.6], 100), fmt([None])
    ('50.0', '50.0 ± 20.0', '–')
    """
    known = [v for v in values if v is not None]
    if not known:
        return "–"
    if len(known) == 1:
        return f"{known[0] * scale:.{digits}f}"
    return f"{statistics.mean(known) * scale:.{digits}f} ± {(max(known) - min(known)) * scale:.{digits}f}"


def guard_codes(records: Iterable[SampleRecord]) -> dict[str, set[str]]:
    """Finding code → the samples in which the guard found it (its ``guard_turn`` events)."""
    out: dict[str, set[str]] = {}
    for r in records:
        for e in r.events:
            if e.get("kind") == "guard_turn":
                for code in e.get("codes") or []:
                    out.setdefault(code, set()).add(r.id)
    return out


def recovery_table(runs: dict[str, Cell], label: str) -> list[str]:
    """Per finding code, from the guard run's events: turns found, fixed by repair, recovered
    after a re-ask, given up; and over the samples where the guard found the code, how many each
    strategy's run scored right (``runs``: strategy → its cell)."""
    guard = next((c for s, c in runs.items() if parse_strategy(s)[0] == "guard"), None)
    if guard is None:
        return [f"({label}: no guard run, so no finding codes)"]
    events = [e for r in guard.records for e in r.events]
    rows = recovery_by_code(events)
    samples = guard_codes(guard.records)
    names = list(runs)
    lines = [
        f"**Recovery per finding code — {label}** (guard telemetry over guarded turns; then, of the "
        "samples where the guard found the code, how many each run scored right)",
        "",
        "| code | turns found | repaired | re-asked, recovered | gave up | samples | "
        + " | ".join(f"right: {s}" for s in names)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(names),
    ]
    for code in sorted(rows, key=lambda c: (-rows[c]["found"], c)):
        row = rows[code]
        ids = samples.get(code, set())
        right = [str(len(ids & runs[s].correct)) for s in names]
        lines.append(
            f"| `{code}` | {row['found']} | {row['repair']} | {row['reask']} | {row['gave_up']} | {len(ids)} | "
            + " | ".join(right)
            + " |"
        )
    if not rows:
        lines.append("| (no findings) | 0 | 0 | 0 | 0 | 0 |" + " |" * len(names))
    return lines


def groups_of(args: argparse.Namespace) -> list[str]:
    return args.categories.split(",") if args.benchmark == "bfcl" else [args.benchmark]


def header_lines(benchmark: str, label: str) -> list[str]:
    columns = ["group" if benchmark != "bfcl" else "category", "strategy", *[c for c, _, _ in METRICS[benchmark][1]],
               "fixed", "broke", "requests / sample", "output tokens / sample", "s / sample"]  # fmt: skip
    return [f"**{label}**", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def row_of(benchmark: str, group: str, strategy: str, cells: list[Cell], baseline: list[Cell] | None) -> str:
    """One table row: the metrics, fixed and broke against ``baseline`` (``None``: this is it),
    requests, output tokens and seconds per sample; several cells (seeds) as mean ± spread."""
    fixed = [float(len(c.correct - b.correct)) for c, b in zip(cells, baseline or [], strict=False)]
    broke = [float(len(b.correct - c.correct)) for c, b in zip(cells, baseline or [], strict=False)]
    row = [
        group,
        strategy,
        *[fmt([c.metrics.get(key) for c in cells], scale) for _, key, scale in METRICS[benchmark][1]],
        fmt(fixed, digits=0) if baseline is not None else "",
        fmt(broke, digits=0) if baseline is not None else "",
        fmt([c.requests for c in cells], digits=2),
        fmt([c.output_tokens for c in cells]),
        fmt([c.seconds for c in cells]),
    ]
    return "| " + " | ".join(row) + " |"


def run_table(
    args: argparse.Namespace, model: object, label: str, runs_dir: Path
) -> tuple[list[str], dict[str, dict[str, Cell]]]:
    """The score table of ``model`` and, per group, the first seed's cell of each strategy."""
    seeds = [int(s) for s in args.seeds.split(",")]
    strategies = split_strategies(args.strategies)
    sampled = args.temperature > 0
    lines = header_lines(args.benchmark, label)
    first: dict[str, dict[str, Cell]] = {}
    for group in groups_of(args):
        baseline: list[Cell] | None = None
        for strategy in strategies:
            try:
                cells = [
                    run_cell(args, group, strategy, seed, model, runs_dir)
                    for seed in (seeds if sampled else seeds[:1])
                ]
            except Exception as exc:  # one failed cell is a finding to report, not the end of the table
                lines.append(f"| {group} | {strategy} | failed: {type(exc).__name__}: {str(exc)[:200]} |")
                print(lines[-1], flush=True)
                continue
            first.setdefault(group, {})[strategy] = cells[0]
            lines.append(row_of(args.benchmark, group, strategy, cells, baseline))
            if baseline is None:
                baseline = cells
            print(lines[-1], flush=True)
    return lines, first


def tables_from_runs(root: Path, real_label: str | None = None) -> list[str]:
    """The tables (and recovery per finding code) of the finished runs under ``root``, each
    strategy against the group's first run without one, titled with the model each run's
    manifest names (``real_label`` in its place, where the runs are of one real model)."""
    cells = cells_from_runs(root)
    real = sorted({model for model, *_ in cells if not model.startswith("noisy/")})
    if real_label is not None and len(real) > 1:
        raise ValueError(f"--label names one model, and {root} holds runs of {len(real)}: {', '.join(real)}")
    lines: list[str] = []
    for (model, benchmark, group, temperature), runs in cells.items():
        decoding = (
            f"sampled at temperature {temperature} (mean ± spread over seeds)" if temperature else "greedy"
        )
        label = (
            f"SIMULATION: {model} (not a model's result)"
            if model.startswith("noisy/")
            else f"REAL MODEL: {real_label or model}"
        )
        lines += header_lines(benchmark, f"{label}, {decoding}")
        order = sorted(runs, key=lambda s: (s != "none", list(runs).index(s)))
        baseline = runs.get("none")
        for strategy in order:
            lines.append(
                row_of(benchmark, group, strategy, runs[strategy], None if strategy == "none" else baseline)
            )
        lines += ["", *recovery_table({s: runs[s][0] for s in order}, f"{label}, {decoding}, {group}"), ""]
    return lines


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmark", default="bfcl", choices=sorted(METRICS))
    parser.add_argument("--model", default="local/smollm2-135m")
    parser.add_argument("--engine", default=None, help="local/ engine: llama.cpp or transformers")
    parser.add_argument("--categories", default="simple_python", help="BFCL categories")
    parser.add_argument("--strategies", default="none,guard,self-refine:when=findings")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--tool-mode", default="native", choices=["native", "prompt"])
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--batch", type=int, default=1, help="samples in flight (the hf engine batches them)")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the benchmark's data (BFCL: the shared data; critic: a suite from `toolmend build critic`, "
        "by default the seed-0 world suite; world: a tasks.jsonl file)",
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("runs") / "real-models")
    parser.add_argument("--machine", default=f"{os.cpu_count()}-core CPU ({platform.machine()})")
    parser.add_argument("--label", default=None, help="the model's label in the table's title")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--recovery", action="store_true", help="add the recovery table per finding code")
    parser.add_argument("--simulation", default=None, metavar="MODEL",
                        help="also run MODEL (noisy/scripted), labelled SIMULATION, for its recovery table")  # fmt: skip
    parser.add_argument("--from-runs", type=Path, default=None, metavar="DIR",
                        help="no new runs: the tables of the finished run directories under DIR")  # fmt: skip
    parser.add_argument("--noise", type=float, default=0.3, help="the simulated model's error rate")
    parser.add_argument("-M", "--model-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    if args.from_runs is not None:
        try:
            text = "\n".join(tables_from_runs(args.from_runs, args.label))
        except ValueError as exc:
            print(f"real_models.py: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        print(text)
        if args.out is not None:
            args.out.write_text(text + "\n", encoding="utf-8")
        return text

    from toolmend.models import get_model

    options: dict[str, Any] = {"tool_mode": args.tool_mode}
    if args.engine:
        options["engine"] = args.engine
    if args.max_new_tokens:
        options["max_new_tokens"] = args.max_new_tokens
    options.update(option_pairs(args.model_option))
    simulated = args.model.startswith("noisy/")
    model: Any = args.model if simulated else get_model(args.model, cache=False, **options)
    if simulated:  # run_bench builds noisy/ models around the benchmark's oracle
        args.model_options = {"noise": args.noise}
    sampled = args.temperature > 0
    decoding = (
        f"sampled at temperature {args.temperature} over seeds {args.seeds} (mean ± spread)"
        if sampled
        else "greedy"
    )
    label = (
        f"SIMULATION: {args.model}, noise {args.noise} (not a model's result), {decoding}"
        if simulated
        else f"REAL MODEL: {args.label or model.name}, {decoding}"
    )
    what = {
        "bfcl": f"BFCL compat scorer, first {args.limit} samples of each category",
        "world": f"world benchmark, first {args.limit} tasks",
        "critic": f"critic suite ({args.data.name if args.data else 'seed 0'}), first {args.limit} samples",
    }[args.benchmark]
    lines = [
        f"`{shlex.join(['python', 'benchmarks/real_models.py', *(argv if argv is not None else sys.argv[1:])])}`",
        "",
        f"Model: {args.model if simulated else model.name}, {args.tool_mode} tool mode"
        + "".join(f", -M {pair}" for pair in args.model_option)
        + "".join(f", -o {pair}" for pair in args.option)
        + f", {decoding}; {what}; machine: {args.machine}; {dt.date.today().isoformat()}.",
        "",
    ]
    table, cells = run_table(args, model, label, args.runs_dir)
    lines += table
    if args.recovery:
        for group, runs in cells.items():
            lines += ["", *recovery_table(runs, f"{label}, {group}")]
    if args.simulation:
        sim = args.simulation  # run_bench builds noisy/ models around the benchmark's oracle
        sim_args = argparse.Namespace(
            **{**vars(args), "temperature": 0.0, "seeds": "0", "model_options": {"noise": args.noise}}
        )
        sim_label = f"SIMULATION: {args.simulation}, noise {args.noise} (not a model's result)"
        sim_table, sim_cells = run_table(sim_args, sim, sim_label, args.runs_dir / "simulation")
        lines += ["", *sim_table]
        for group, runs in sim_cells.items():
            lines += ["", *recovery_table(runs, f"{sim_label}, {group}")]
    text = "\n".join(lines)
    print()
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return text


if __name__ == "__main__":
    main()

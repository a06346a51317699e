"""Real models on this CPU: a local model on BFCL categories with each recovery strategy.
REAL MODEL: every reply is the model's own (no simulation), through the real runner (``run_bench``).

    .venv/bin/python benchmarks/real_models.py [--model local/smollm2-135m] [--limit 20]
        [--categories simple_python,multiple,parallel,irrelevance] [--tool-mode native]
        [--strategies none,guard,self-refine:when=findings] [--seeds 0] [--temperature 0]
        [-M tool_choice=required]

One row per category and strategy: accuracy (BFCL's compat scorer), the samples the strategy fixed
and broke against no strategy, requests and output tokens per sample, and wall seconds per sample.
``--temperature 0`` (the default) is greedy, one run per cell; with a temperature above 0, each
seed is a run and the cell shows the mean ± the spread (max − min) over the seeds. A strategy's
options follow a colon (``self-refine:when=findings`` is ``--strategy self-refine -S when=findings``).
The table is printed as Markdown with the command, the machine and the date; ``--out`` also writes
it to a file. Run directories stay under ``--runs-dir`` for ``toolmend report``. ``-M KEY=VALUE``
is a backend option, as for ``toolmend bench`` (``tool_choice=required``: every reply opens with a
call, which a model that answers in prose needs for its calls to be measured at all).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolmend import run_bench
from toolmend._shared import shared_dir
from toolmend.runs import RunDir


@dataclass
class Cell:
    accuracy: float
    correct: set[str]
    requests: float
    output_tokens: float
    seconds: float


def parse_strategy(spec: str) -> tuple[str, dict[str, object]]:
    """``name`` or ``name:key=value,key=value`` → (name, options)."""
    name, _, rest = spec.partition(":")
    options: dict[str, object] = {}
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition("=")
        options[key] = int(value) if value.isdigit() else value
    return name, options


def run_cell(args: argparse.Namespace, category: str, strategy: str, seed: int, model: object) -> Cell:
    name, options = parse_strategy(strategy)
    start = time.perf_counter()
    result = run_bench(
        "bfcl",
        model,  # type: ignore[arg-type]
        data=args.data,
        categories=[category],
        limit=args.limit,
        tool_mode=args.tool_mode,
        strategy=None if name == "none" else name,
        strategy_options=options,
        temperature=args.temperature,
        seed=seed,
        runs_dir=args.runs_dir,
        cache=False,
        max_connections=args.batch,
    )
    seconds = time.perf_counter() - start
    records = RunDir.open(result.run_dir).read_records()
    n = max(len(records), 1)
    return Cell(
        accuracy=result.summary.metrics.get("overall_sample_weighted", 0.0),
        correct={r.id for r in records if (r.scores or {}).get("accuracy") == 1.0},
        requests=sum(r.requests for r in records) / n,
        output_tokens=sum(r.usage.output_tokens for r in records) / n,
        seconds=seconds / n,
    )


def fmt(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    if len(values) == 1:
        return f"{values[0] * scale:.{digits}f}"
    return f"{statistics.mean(values) * scale:.{digits}f} ± {(max(values) - min(values)) * scale:.{digits}f}"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="local/smollm2-135m")
    parser.add_argument("--engine", default=None, help="local/ engine: llama.cpp or transformers")
    parser.add_argument("--categories", default="simple_python")
    parser.add_argument("--strategies", default="none,guard,self-refine:when=findings")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--tool-mode", default="native", choices=["native", "prompt"])
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--batch", type=int, default=8, help="samples in flight (the hf engine batches them)")
    parser.add_argument("--data", type=Path, default=shared_dir() / "data" / "bfcl")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs") / "real-models")
    parser.add_argument("--machine", default=f"{os.cpu_count()}-core CPU ({platform.machine()})")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("-M", "--model-option", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    from toolmend.models import get_model

    options: dict[str, Any] = {"tool_mode": args.tool_mode}
    if args.engine:
        options["engine"] = args.engine
    if args.max_new_tokens:
        options["max_new_tokens"] = args.max_new_tokens
    for pair in args.model_option:
        key, _, value = pair.partition("=")
        options[key] = int(value) if value.isdigit() else value
    model = get_model(args.model, cache=False, **options)
    seeds = [int(s) for s in args.seeds.split(",")]
    strategies = args.strategies.split(",")
    sampled = args.temperature > 0
    lines = [
        f"`{shlex.join(['python', 'benchmarks/real_models.py', *(argv if argv is not None else sys.argv[1:])])}`",
        "",
        f"Model: {model.name}, {args.tool_mode} tool mode"
        + "".join(f", {pair}" for pair in args.model_option)
        + ", "
        + (
            f"sampled at temperature {args.temperature} over seeds {args.seeds} (mean ± spread)"
            if sampled
            else "greedy"
        )
        + f"; BFCL compat scorer, first {args.limit} samples of each category; machine: {args.machine}; "
        f"{dt.date.today().isoformat()}.",
        "",
        "| category | strategy | accuracy % | fixed | broke | requests / sample | output tokens / sample | s / sample |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for category in args.categories.split(","):
        baseline: list[Cell] | None = None
        for strategy in strategies:
            cells = [
                run_cell(args, category, strategy, seed, model) for seed in (seeds if sampled else seeds[:1])
            ]
            if baseline is None:
                baseline = cells
            fixed = [len(c.correct - b.correct) for c, b in zip(cells, baseline, strict=True)]
            broke = [len(b.correct - c.correct) for c, b in zip(cells, baseline, strict=True)]
            row = [
                category,
                strategy,
                fmt([c.accuracy for c in cells], 100),
                fmt([float(x) for x in fixed], digits=0) if strategy != strategies[0] else "",
                fmt([float(x) for x in broke], digits=0) if strategy != strategies[0] else "",
                fmt([c.requests for c in cells], digits=2),
                fmt([c.output_tokens for c in cells]),
                fmt([c.seconds for c in cells]),
            ]
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print()
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n", encoding="utf-8")
    return table


if __name__ == "__main__":
    main()

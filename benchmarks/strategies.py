"""Every recovery strategy on BFCL (simple_python, multiple, parallel), NesTools and the critic
suite, against the seeded ``noisy/scripted`` model at three noise levels. SIMULATION: no LLM is
involved; the "model" is the gold oracle with labelled errors and set reactions to feedback.

    .venv/bin/python benchmarks/strategies.py [--limit 40] [--noise 0.1,0.3,0.5] [--strategies ...]

One table per benchmark: per noise level and strategy, the headline score; the samples right
with no strategy and wrong with it (regressions) and the reverse (fixed); the share of injected
errors that ended in a fully correct sample, per error label; and the extra requests and tokens
per sample against the same model with no strategy. The noisy model's parameters are printed
with every table. Every run goes through the real runner (``run_bench``), so each leaves a run
directory that ``toolmend report`` reads; scores are the benchmarks' own compat scorers.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolmend._bench import _oracle, run_bench
from toolmend._shared import shared_dir
from toolmend.benchmarks import BENCHMARKS, Benchmark, load_builtin_benchmarks
from toolmend.runs import RunDir
from toolmend.strategies._noisy import NoisyModel

STRATEGIES = [
    "none",
    "guard",
    "hitec-icl",
    "reflect",
    "self-refine",
    "best-of-n",
    "env-policy",
    "hitec-icl+guard",
]
# Aggregate metrics shown beside the headline (CriticTool's behaviour scores are where env-policy acts).
EXTRA = {"critictool": ["overall", "retry", "break", "skip_finish_tool"]}


@dataclass
class Outcome:
    scores: dict[str, float | None] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str | None] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    run_dir: Path | None = None


@dataclass
class Target:
    bench: Benchmark
    data: Path
    options: dict[str, Any]
    limit: int | None


def target(name: str, limit: int, seed: int, work: Path) -> Target:
    load_builtin_benchmarks()
    if name.startswith("bfcl:"):
        bench = BENCHMARKS.get("bfcl")()
        return Target(bench, shared_dir() / "data" / "bfcl", {"categories": [name.split(":")[1]]}, limit)
    if name == "nestools":
        bench = BENCHMARKS.get("nestools")()
        return Target(bench, shared_dir() / "data" / "nestools", {"seed": seed, "limit": limit}, limit)
    from toolmend.benchmarks.critic import build_suite

    # A suite of `limit` trajectories keeps the critic suite's mix of error-free, internal and
    # external samples (the first N samples of a full suite would not).
    info = build_suite(source="world", seed=seed, out=work / "critic", limit=limit)
    return Target(BENCHMARKS.get("critictool")(), info.root, {}, None)


def solve_all(t: Target, spec: str, noisy: dict[str, Any], runs: Path) -> Outcome:
    """One run through the real runner (``run_bench``): the run directory stays under ``runs`` for
    ``toolmend report``. The gold oracle behind the noise is the runner's own ``scripted`` model."""
    model = NoisyModel(_oracle(t.bench, 0.0, 16), **noisy)
    result = run_bench(
        t.bench, model, data=t.data, load_options=t.options, limit=t.limit, runs_dir=runs,
        strategy=None if spec == "none" else spec, cache=False, progress=False,
    )  # fmt: skip
    out = Outcome(metrics=dict(result.summary.metrics), run_dir=result.run_dir)
    for r in RunDir.open(result.run_dir).read_records():
        out.scores[r.id] = r.scores.get(t.bench.headline)
        out.requests[r.id] = r.requests
        out.tokens[r.id] = r.usage.total_tokens
        out.events.extend(r.events)
        out.labels[r.id] = model.first_label.get(r.id)
    return out


def fmt_labels(out: Outcome, base: Outcome) -> str:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sid, label in base.labels.items():
        if label is None:
            continue
        found[label][0] += 1
        found[label][1] += out.scores.get(sid) == 1.0
    return ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in sorted(found.items()))


def table(name: str, results: dict[tuple[float, str], Outcome], noisy: dict[str, Any], n: int) -> None:
    print(f"\n### {name} — SIMULATION (noisy/scripted, {n} samples; p_fix_precise={noisy['p_fix_precise']}, "
          f"p_fix_vague={noisy['p_fix_vague']}, p_break={noisy['p_break']}, seed={noisy['seed']})\n")  # fmt: skip
    bench = BENCHMARKS.get("critictool" if name == "critic" else name.split(":")[0])()
    key, extra = bench.headline, EXTRA.get(bench.name, [])
    head = "".join(f" {m} |" for m in extra)
    print(f"| noise | strategy | {key} % |{head} regressions | fixed | +requests/sample | +tokens/sample "
          "| injected errors ending correct |")  # fmt: skip
    print("|---|---|---:|" + "---:|" * len(extra) + "---:|---:|---:|---:|---|")
    for (noise, spec), out in results.items():
        base = results[(noise, "none")]
        valid = [v for v in out.scores.values() if v is not None]
        score = 100 * sum(valid) / len(valid) if valid else float("nan")
        both = [k for k in base.scores if base.scores[k] is not None and out.scores.get(k) is not None]
        reg = sum(base.scores[k] == 1.0 and out.scores[k] != 1.0 for k in both)
        fix = sum(base.scores[k] != 1.0 and out.scores[k] == 1.0 for k in both)
        req = (sum(out.requests.values()) - sum(base.requests.values())) / max(1, len(out.requests))
        tok = (sum(out.tokens.values()) - sum(base.tokens.values())) / max(1, len(out.tokens))
        cols = "".join(f" {out.metrics.get(m, float('nan')):.1f} |" for m in extra)
        print(f"| {noise} | {spec} | {score:.1f} |{cols} {reg} | {fix} | {req:.2f} | {tok:.0f} "
              f"| {fmt_labels(out, base)} |")  # fmt: skip


def guard_recovery(results: dict[tuple[float, str], Outcome]) -> None:
    from toolmend.strategies._metrics import recovery_by_code

    rows: dict[str, dict[str, int]] = defaultdict(lambda: {"found": 0, "repair": 0, "reask": 0, "gave_up": 0})
    for (_, spec), out in results.items():
        if spec != "guard":
            continue
        for code, row in recovery_by_code(out.events).items():
            for k, v in row.items():
                rows[code][k] += v
    if not rows:
        return
    print("\nguard, all noise levels: finding code → fixed by repair / recovered by re-ask / given up")
    print("| code | found | repair | re-ask | gave up | recovered |")
    print("|---|---:|---:|---:|---:|---:|")
    for code, r in sorted(rows.items()):
        rate = 100 * (r["repair"] + r["reask"]) / r["found"] if r["found"] else 0.0
        print(f"| {code} | {r['found']} | {r['repair']} | {r['reask']} | {r['gave_up']} | {rate:.0f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="samples per benchmark (per BFCL category)")
    parser.add_argument("--noise", default="0.1,0.3,0.5")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument(
        "--benchmarks", default="bfcl:simple_python,bfcl:multiple,bfcl:parallel,nestools,critic"
    )
    parser.add_argument("--p-fix-precise", type=float, default=0.9)
    parser.add_argument("--p-fix-vague", type=float, default=0.3)
    parser.add_argument("--p-break", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs-dir", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    levels = [float(x) for x in args.noise.split(",")]
    specs = args.strategies.split(",")
    if "none" not in specs:
        specs.insert(0, "none")
    work = Path(tempfile.mkdtemp(prefix="toolmend-strategies-"))
    runs = args.runs_dir or work / "runs"
    for name in args.benchmarks.split(","):
        t = target(name, args.limit, args.seed, work)
        results: dict[tuple[float, str], Outcome] = {}
        noisy: dict[str, Any] = {}
        for noise in levels:
            noisy = {"noise": noise, "p_fix_precise": args.p_fix_precise, "p_fix_vague": args.p_fix_vague,
                     "p_break": args.p_break, "seed": args.seed}  # fmt: skip
            for spec in specs:
                results[(noise, spec)] = solve_all(t, spec, noisy, runs)
        n = len(next(iter(results.values())).scores)
        table(name, results, noisy, n)
        guard_recovery(results)
    print(f"\nrun directories: {runs} (toolmend report <dirs> compares them)")


if __name__ == "__main__":
    main()

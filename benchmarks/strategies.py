"""Every recovery strategy on BFCL (simple_python, multiple, parallel), NesTools and the critic
suite, against the seeded ``noisy/scripted`` model at three noise levels. SIMULATION: no LLM is
involved; the "model" is the gold oracle with labelled errors and set reactions to feedback.

    .venv/bin/python benchmarks/strategies.py [--limit 40] [--noise 0.1,0.3,0.5] [--strategies ...]

One table per benchmark: per noise level and strategy, the headline score; the samples right
with no strategy and wrong with it (regressions) and the reverse (fixed); the share of injected
errors that ended in a fully correct sample, per error label; and the extra requests and tokens
per sample against the same model with no strategy. The noisy model's parameters are printed
with every table. Each sample is solved the way the runner does (``bench.solve`` / the
interactive CriticTool loop, ``generate`` wrapped by the strategies); scores are the benchmarks'
own compat scorers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolmend._bench import episode_turn
from toolmend._schema import Message, Sample
from toolmend._shared import shared_dir
from toolmend.benchmarks import BENCHMARKS, Benchmark, Prediction, load_builtin_benchmarks
from toolmend.models import get_model
from toolmend.strategies import SolveState, apply_strategies, build_strategies
from toolmend.strategies._noisy import NoisyModel, sample_tools

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
HEADLINE = {"bfcl": "accuracy", "nestools": "tree_pass", "critictool": "tool"}
# Aggregate metrics shown beside the headline (CriticTool's behaviour scores are where env-policy acts).
EXTRA = {"critictool": ["overall", "retry", "break", "skip_finish_tool"]}
_CURRENT: contextvars.ContextVar[tuple[Benchmark, Sample, list[int]]] = contextvars.ContextVar("sample")


def oracle(messages: list[Message]) -> str:
    bench, sample, _ = _CURRENT.get()
    gold = bench.gold(sample)
    if isinstance(gold, str):
        return gold
    return gold[min(episode_turn(bench.prompt(sample), messages), len(gold) - 1)]


@dataclass
class Outcome:
    scores: dict[str, float | None] = field(default_factory=dict)
    predictions: dict[str, Prediction] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str | None] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def base_generate(model: NoisyModel, sample: Sample, counts: list[int]) -> Any:
    """The runner's generate: one request; turns of an episode count up as epochs."""
    turn = [0]

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        if epoch is None:
            epoch, turn[0] = turn[0], turn[0] + 1
        completion = await model.generate(messages, epoch=epoch, sample_id=sample.id)
        counts[0] += 1
        counts[1] += completion.usage.total_tokens
        return completion.text

    return generate


async def solve_all(bench: Benchmark, samples: list[Sample], spec: str, noisy: dict[str, Any]) -> Outcome:
    model = NoisyModel(get_model("scripted", script=oracle), **noisy)
    strategies = build_strategies(spec)
    out = Outcome()
    start = time.perf_counter()
    for sample in samples:
        _CURRENT.set((bench, sample, [0]))
        sample_tools.set(list(sample.tools))
        counts = [0, 0]
        generate = base_generate(model, sample, counts)

        state = SolveState(sample=sample, benchmark=bench)
        wrapped = apply_strategies(strategies, generate, state)
        prediction = await bench.solve(sample, wrapped)
        out.predictions[sample.id] = prediction
        out.requests[sample.id], out.tokens[sample.id] = counts
        out.events.extend(state.events)
        out.labels[sample.id] = model.first_label.get(sample.id)
    bench.prepare(samples, [out.predictions[s.id] for s in samples])
    key = HEADLINE[bench.name]
    scores = [bench.score(s, out.predictions[s.id], "compat") for s in samples]
    out.scores = {sc.id: sc.values.get(key) for sc in scores}
    out.metrics = bench.aggregate(scores, "compat")
    out.seconds = time.perf_counter() - start
    return out


def load(name: str, limit: int, seed: int) -> tuple[Benchmark, list[Sample]]:
    load_builtin_benchmarks()
    if name.startswith("bfcl:"):
        bench = BENCHMARKS.get("bfcl")()
        return bench, bench.load(shared_dir() / "data" / "bfcl", categories=[name.split(":")[1]])[:limit]
    if name == "nestools":
        bench = BENCHMARKS.get("nestools")()
        return bench, bench.load(shared_dir() / "data" / "nestools", seed=seed, limit=limit)[:limit]
    from toolmend.benchmarks.critic import build_suite

    folder = Path(tempfile.mkdtemp(prefix="toolmend-strategies-"))
    path = build_suite(source="world", seed=seed, out=folder).root
    bench = BENCHMARKS.get("critictool")()
    samples = bench.load(path)
    # Every kind of sample, in the suite's proportions.
    step = max(1, len(samples) // limit)
    return bench, samples[::step][:limit]


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
    bench = "critictool" if name == "critic" else name.split(":")[0]
    key, extra = HEADLINE[bench], EXTRA.get(bench, [])
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


async def main() -> None:
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
    args = parser.parse_args()
    levels = [float(x) for x in args.noise.split(",")]
    specs = args.strategies.split(",")
    if "none" not in specs:
        specs.insert(0, "none")
    for name in args.benchmarks.split(","):
        bench, samples = load(name, args.limit, args.seed)
        results: dict[tuple[float, str], Outcome] = {}
        noisy: dict[str, Any] = {}
        for noise in levels:
            noisy = {"noise": noise, "p_fix_precise": args.p_fix_precise, "p_fix_vague": args.p_fix_vague,
                     "p_break": args.p_break, "seed": args.seed}  # fmt: skip
            for spec in specs:
                results[(noise, spec)] = await solve_all(bench, samples, spec, noisy)
        table(name, results, noisy, len(samples))
        guard_recovery(results)


if __name__ == "__main__":
    asyncio.run(main())

"""Per operator: how many gold steps of the built-in world it applies to, how many of those
injections a schema-level check can see, and how many of those the checker (or, for errors in
the raw text, the parser) actually flags with the expected codes and the same CriticTool
category. Also the cost of one injection relative to one checker pass over the same call list.

    .venv/bin/python benchmarks/inject_rates.py [--seed 0] [--task-seed 0] [--markdown]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from toolmend.check import Checker, critictool_category
from toolmend.formats import parse_calls
from toolmend.synth.inject import OPERATORS, inject, operator_names
from toolmend.world import World, generate_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0, help="injection seed")
    parser.add_argument("--task-seed", type=int, default=0, help="world / task seed")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()

    tasks = generate_tasks(seed=args.task_seed)
    checker = Checker(World.create(args.task_seed).tools)
    steps = sum(len(t.calls) for t in tasks)

    start = time.perf_counter()
    for t in tasks:
        checker.check(t.calls)
    check_cost = (time.perf_counter() - start) / len(tasks)

    rows = []
    for name in operator_names():
        op = OPERATORS.get(name)
        tally: Counter[str] = Counter()
        start = time.perf_counter()
        injections = []
        for t in tasks:
            for k in range(len(t.calls)):
                inj = inject(t.calls, checker, name, seed=args.seed, step=k)
                if inj is not None:
                    injections.append(inj)
        cost = (time.perf_counter() - start) / max(1, sum(len(t.calls) for t in tasks))
        for inj in injections:
            tally["applied"] += 1
            tally[inj.sub_label] += 0  # keep every sub-label visible
            if not inj.detectable:
                continue
            tally["detectable"] += 1
            if inj.text is not None:
                found = {f.code for f in parse_calls(inj.text).findings}
                tally["flagged"] += set(inj.expected_codes) <= found
                continue
            findings = checker.check(inj.calls, inj.expected_count)
            flagged = set(inj.expected_codes) <= {f.code for f in findings}
            if inj.category is not None:
                flagged = flagged and any(
                    critictool_category(f.code) == inj.category for f in findings if f.call == inj.step
                )
            tally["flagged"] += flagged
        rows.append((name, op.family, op.label, tally, cost / check_cost))

    if args.markdown:
        print(
            f"world seed {args.task_seed}: {len(tasks)} tasks, {steps} gold steps; injection seed {args.seed}\n"
        )
        print(
            "| operator | family | label | applies to | schema-visible | flagged | time per injection ÷ one check of a task |"
        )
        print("|---|---|---|---:|---:|---:|---:|")
    else:
        print(f"{len(tasks)} tasks, {steps} gold steps")
        print(f"{'operator':<30}{'applies':>9}{'visible':>9}{'flagged':>9}{'x check':>9}")
    for name, family, label, t, ratio in rows:
        vis, flag = t["detectable"], t["flagged"]
        rate = f"{flag / vis:.1%}" if vis else "n/a"
        if args.markdown:
            print(
                f"| `{name}` | {family} | `{label}` | {t['applied']} / {steps} | {vis} | {flag} ({rate}) | {ratio:.1f}x |"
            )
        else:
            print(f"{name:<30}{t['applied']:>9}{vis:>9}{flag:>9}{ratio:>8.1f}x  {rate}")


if __name__ == "__main__":
    main()

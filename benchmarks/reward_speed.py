"""Throughput of the reflection reward (completions/s) against a naive reference in this script.

The reference is written the straightforward way — the equations transcribed, the ground truth
re-parsed for every completion, patterns compiled on each call — and must give identical values.
Completions are GRPO-like groups of 8 variants (exact, no reflection, wrong argument, extra
final, extra call, truncated, think-wrapped, plain text) of each gold reply in the shared
Tool-Reflection-Bench sample.

    .venv/bin/python benchmarks/reward_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter
from typing import Any

from toolmend._shared import shared_dir
from toolmend.benchmarks.reflection_bench._reward import _gold, reflection_reward


def naive_parts(text: str) -> tuple[str, list[dict[str, Any]], str]:
    text = re.sub("<think>.*?</think>", "", text, flags=re.DOTALL | re.IGNORECASE)
    reflect = re.search("<reflect>(.*?)</reflect>", text, flags=re.DOTALL | re.IGNORECASE)
    final = re.search("<final>(.*?)</final>", text, flags=re.DOTALL | re.IGNORECASE)
    calls: list[dict[str, Any]] = []
    for _, body in re.findall(r"<(tool_call|call)>(.*?)</\1>", text, flags=re.DOTALL | re.IGNORECASE):
        try:
            obj = json.loads(body)
        except ValueError:
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            if isinstance(item, dict):
                name, args = item.get("name"), item.get("arguments", item.get("parameters"))
                if isinstance(name, str) and isinstance(args, dict):
                    calls.append({"name": name.strip(), "arguments": args})
    return (reflect.group(1).strip() if reflect else "", calls, final.group(1).strip() if final else "")


def naive_sim(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    a = re.sub(r"\s+", " ", a.strip().lower())
    b = re.sub(r"\s+", " ", b.strip().lower())
    if a == b:
        return 1.0

    def grams(s: str, n: int) -> set[str]:
        t = s.split(" ")
        return {" ".join(t)} if len(t) < n else {" ".join(t[i : i + n]) for i in range(len(t) - n + 1)}

    def jac(x: set[str], y: set[str]) -> float:
        return len(x & y) / len(x | y) if x | y else 0.0

    score = 0.6 * jac(grams(a, 1), grams(b, 1)) + 0.3 * jac(grams(a, 2), grams(b, 2))
    score += 0.1 * min(len(a), len(b)) / max(len(a), len(b), 1)
    return max(0.0, min(1.0, score))


def _canon(v: Any) -> Any:
    if isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def _lin(reflect: str, calls: list[dict[str, Any]], final: str) -> str:
    return " ".join([reflect, json.dumps(calls, ensure_ascii=False, default=str), final])


def naive_reward(completion: str, gold: str) -> float:
    cr, cc, cf = naive_parts(completion)
    gr, gc, gf = naive_parts(gold)
    n, m = len(gc), len(cc)

    def key(c: dict[str, Any]) -> str:
        return json.dumps(
            _canon([c["name"], c["arguments"]]), sort_keys=True, ensure_ascii=False, default=str
        )

    equal = n == m and Counter(map(key, cc)) == Counter(map(key, gc))
    ir, ic, if_ = bool(gr), n > 0, bool(gf)
    w_act = 0.1 * ir + 0.7 * ic + 0.2 * if_
    s = (
        0.1 * ir * (naive_sim(cr, gr) if ir else 0)
        + 0.7 * ic * equal
        + 0.2 * if_ * (naive_sim(cf, gf) if if_ else 0)
    )
    s = s / w_act if w_act > 0 else 1.0
    p_miss = 0.1 * (ir and not cr) + 0.2 * (if_ and not cf) + 0.7 * (n > 0 and m == 0)
    p_extra = 0.1 * (bool(cr) and not ir) + 0.2 * (bool(cf) and not if_) + 0.7 * (m > 0 and n == 0)
    p_count = 0.7 * abs(n - m) / max(n, m) if (n > 0 and m > 0 and n != m) else 0.0
    if p_miss == 0 and p_extra == 0 and p_count == 0:
        f = 1.0
    else:
        r = 0.3 if (equal and n > 0) else 1.0
        f = max(0.0, min(1.0, 1 - 0.8 * (p_miss + 0.8 * p_extra + 0.6 * p_count) * r))
    core = s * f
    if core >= 1e-6:
        return max(0.0, min(1.0, core))
    return max(0.0, min(1.0, 0.15 * naive_sim(_lin(cr, cc, cf), _lin(gr, gc, gf))))


def variants(gold: str) -> list[str]:
    no_reflect = re.sub(r"<reflect>.*?</reflect>", "", gold, flags=re.DOTALL)
    wrong_arg = re.sub(r'("arguments": \{"[^"]+": )', r"\1 12345, \"_x\": ", gold, count=1)
    tagged = re.findall(r"<tool_call>.*?</tool_call>", gold, flags=re.DOTALL)
    extra_call = gold + (tagged[-1] if tagged else "")
    return [
        gold,
        no_reflect,
        wrong_arg,
        gold + "\n<final>All done.</final>",
        extra_call,
        gold[: len(gold) // 2],
        "<think>let me see</think>" + gold,
        "I am not sure what went wrong, sorry.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = shared_dir() / "data/tool-reflection-bench/test_qwen_sample.jsonl"
    golds = [
        json.loads(line)["ground_truth"] for line in path.read_text(encoding="utf-8").splitlines() if line
    ]
    pairs = [(c, g) for g in golds for c in variants(g)]

    ours = [reflection_reward(c, g) for c, g in pairs]
    ref = [naive_reward(c, g) for c, g in pairs]
    worst = max(abs(a - b) for a, b in zip(ours, ref, strict=True))
    assert worst < 1e-12, f"values differ by {worst}"

    def once(fn: Any) -> float:
        _gold.cache_clear()  # each run starts cold, as a new GRPO batch would
        t0 = time.perf_counter()
        for c, g in pairs:
            fn(c, g)
        return time.perf_counter() - t0

    # Interleave the two so that load from other processes hits both alike; keep medians.
    runs = [(once(naive_reward), once(reflection_reward)) for _ in range(args.repeat)]
    t_ref = statistics.median(r for r, _ in runs)
    t_ours = statistics.median(o for _, o in runs)
    ratio = statistics.median(r / o for r, o in runs)
    print(f"completions: {len(pairs)} ({len(golds)} gold replies x 8 variants), repeats: {args.repeat}")
    print(f"values identical: max |diff| = {worst:.1e}; mean reward {sum(ours) / len(ours):.4f}")
    print(f"naive reference : {len(pairs) / t_ref:10.0f} completions/s")
    print(f"toolmend reward : {len(pairs) / t_ours:10.0f} completions/s")
    print(f"speed-up        : {ratio:10.2f}x (median of per-run ratios)")


if __name__ == "__main__":
    main()

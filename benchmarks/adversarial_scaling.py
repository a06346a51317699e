"""Time per byte of every parser and scorer on degenerate model output, checked to stay flat.

    .venv/bin/python benchmarks/adversarial_scaling.py [--sizes 16000,128000,1000000] [--bound 4] [--limit-us 5]
        [--limit-us-call 100]
        [--only NAME] [--repeat 2]

Models in a repetition loop emit the same fragment thousands of times ("aaaa…", "<tool_call>"
again and again, "{{{{", "f(a=f(a=…"). A scorer that is quadratic in such text blocks the run
(scoring runs beside the requests). For each fragment and each target this script times the
target on the fragment repeated to each size, and prints the time per byte at the largest size
divided by the time per byte at the smallest one. Linear code keeps that ratio near 1; the
script exits 1 when any ratio exceeds ``--bound`` (a quadratic target at these sizes reads
about 60). It also prints the time per byte at the largest size and exits 1 when one exceeds
``--limit-us`` microseconds: linear but slow is a blocked run too (1 MB at 24 µs/B is 24 s). One
fragment is not degenerate but valid: ``"f(a=1)\n"`` repeated is 142,857 real calls per MB, and
its cost is per call read and validated, so it is bound per call instead (``--limit-us-call``).
Targets: ``parse_calls`` in every format, BFCL's decoder and relevance classifier, the
Tool-Reflection-Bench extractors and reward, the grounding check (the output is the conversation,
a value cut from it the call's argument), and ``score`` in both modes of BFCL,
Tool-Reflection-Bench, NesTools, CriticTool (the test fixtures when the shared data has no
CriticTool files), ToolAlpaca, API-Bank and Seal-Tools on a real sample.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FRAGMENTS = [
    "a",
    " ",
    "a(",
    "f(a=",
    "a.",
    "{",
    "{}",
    "[",
    "(",
    '"',
    "'",
    "\\",
    "}",
    '{"name": ',
    '{"name": "f", "arguments": {',
    "<tool_call>",
    "<tool_call>{",
    "</tool_call>",
    "<tool_call>{}",
    "<call>",
    "<reflect>",
    "<final>",
    "<think>",
    "</think>",
    "<",
    "< ",
    "```",
    "```json\n",
    "api_name",
    "[f(a=1), ",
    "f(a=1)\n",
    "Thought: ",
    "Action: f\nAction Input: {",
]


FLOOR = 1e-7
# Fragments that are real calls: the byte count of one call, for the per-call bound.
VALID = {"f(a=1)\n": len("f(a=1)\n")}


def targets() -> dict[str, Callable[[str], Any]]:
    """Name → a function of one model output."""
    from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
    from toolmend.benchmarks.bfcl._decode import classify_output, decode
    from toolmend.benchmarks.reflection_bench._tags import official_calls, released_calls, split_reply
    from toolmend.check import ungrounded
    from toolmend.formats import parse_calls

    out: dict[str, Callable[[str], Any]] = {
        f"parse_calls[{fmt}]": functools.partial(parse_calls, format=fmt)  # type: ignore[misc]
        for fmt in ("auto", "json", "python", "tags", "nestools", "openai")
    }
    out["bfcl.decode+classify"] = lambda t: classify_output(t, decode(t), ["calculate_area"])
    out["reflection.official_calls"] = official_calls
    out["reflection.released_calls"] = released_calls
    out["reflection.split_reply"] = split_reply
    # The conversation is the output and the value a piece of it cut mid-word, so that in a
    # repeated fragment each occurrence fails a word boundary.
    out["ground[value: a tenth of it]"] = lambda t: ungrounded([_call(t[1 : len(t) // 10])], t)
    out["ground[value: 99 bytes of it]"] = lambda t: ungrounded([_call(t[1:100])], t)
    load_builtin_benchmarks()
    from toolmend._shared import shared_dir

    data = shared_dir() / "data"
    critictool = data / "critictool"
    if not (critictool / "internal_error").is_dir():
        critictool = (
            Path(__file__).resolve().parent.parent / "tests" / "benchmarks" / "fixtures" / "critictool"
        )
    loads = {
        "bfcl": lambda b: (
            b.load(data / "bfcl", categories=["irrelevance"])[:1]
            + b.load(data / "bfcl", categories=["simple_python"])[:1]
        ),
        "reflection-bench": lambda b: b.load(data / "tool-reflection-bench")[:1],
        "nestools": lambda b: b.load(data / "nestools", limit=1),
        "critictool": lambda b: b.load(critictool)[:1],
        "toolalpaca": lambda b: b.load(data / "toolalpaca")[:1],
        "api-bank": lambda b: b.load(data / "api-bank")[:1],
        "seal-tools": lambda b: b.load(data / "seal-tools")[:1],
    }
    for name, load in loads.items():
        try:
            bench = BENCHMARKS.get(name)()
            samples = load(bench)
        except Exception as exc:  # data or an optional dependency missing: say so, go on
            print(f"skipping score[{name}]: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for mode in ("compat", "improved"):
            for i, sample in enumerate(samples):
                out[f"score[{name}:{i}:{mode}]"] = functools.partial(_score, bench, sample, mode)
    return out


def _call(value: str) -> Any:
    from toolmend import ToolCall

    return ToolCall(name="f", arguments={"v": value})


def _score(bench: Any, sample: Any, mode: str, text: str) -> Any:
    return bench.score(sample, text, mode)


def _time(fn: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16000,128000,1000000")
    parser.add_argument("--bound", type=float, default=4.0)
    parser.add_argument(
        "--limit-us", type=float, default=5.0, help="bound on µs per byte at the largest size"
    )
    parser.add_argument(
        "--limit-us-call",
        type=float,
        default=100.0,
        help="bound on µs per call for fragments that are valid calls",
    )
    parser.add_argument("--only", default="", help="run only targets whose name contains this")
    parser.add_argument("--repeat", type=int, default=2, help="timings per size (the fastest is kept)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    worst: list[tuple[float, str, str, float]] = []
    crashed: list[str] = []
    for name, fn in targets().items():
        if args.only and args.only not in name:
            continue
        for frag in FRAGMENTS:
            texts = [(frag * (n // len(frag) + 1))[:n] for n in sizes]
            try:
                _time(fn, texts[0])  # warm up
                per_byte = [min(_time(fn, t) for _ in range(args.repeat)) / len(t) for t in texts]
            except Exception as exc:  # a parser or scorer must take any text: this is a defect
                crashed.append(f"{name} on {frag!r}: {type(exc).__name__}: {exc}"[:200])
                continue
            # Fixed costs and timer noise dominate below 100 ns per byte (0.1 s per MB, harmless
            # at any size), so growth is measured from that floor.
            ratio = per_byte[-1] / max(per_byte[0], FLOOR)
            worst.append((ratio, name, frag, per_byte[-1]))
    worst.sort(reverse=True)
    print(f"{'target':38} {'fragment':34} {'us/B @max':>9} {'ratio':>7}")
    for ratio, name, frag, pb in worst[:15]:
        print(f"{name:38} {frag!r:34} {pb * 1e6:9.2f} {ratio:7.2f}")
    slowest = sorted(worst, key=lambda w: w[3], reverse=True)
    print(f"slowest per byte at {sizes[-1]:,} bytes:")
    for _, name, frag, pb in slowest[:10]:
        if frag in VALID:
            per_call = pb * VALID[frag] * 1e6
            print(
                f"{name:38} {frag!r:34} {pb * 1e6:9.2f} µs/B = {per_call:.1f} µs/call (limit {args.limit_us_call})"
            )
        else:
            print(f"{name:38} {frag!r:34} {pb * 1e6:9.2f} µs/B (limit {args.limit_us})")
    bad = [w for w in worst if w[0] > args.bound]
    slow = [
        w
        for w in worst
        if (w[3] * VALID[w[2]] * 1e6 > args.limit_us_call if w[2] in VALID else w[3] * 1e6 > args.limit_us)
    ]
    print(
        f"{len(worst)} target x fragment pairs, sizes {sizes}; worst ratio {worst[0][0]:.2f} (bound {args.bound}); "
        f"{len(slow)} over their limit"
    )
    for line in crashed:
        print(f"CRASHED {line}")
    sys.exit(1 if bad or slow or crashed else 0)


if __name__ == "__main__":
    main()

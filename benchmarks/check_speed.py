"""Speed of the checker on every BFCL gold call, against the naive baseline, in one run.

    .venv/bin/python benchmarks/check_speed.py [--repeat 3]

Baseline: what simple wrappers do — ``jsonschema.validate(arguments, schema)`` per call, which
rebuilds the validator (and re-checks the schema) every time. toolmend: one ``Checker`` per
record (compiled on first use, as a guard would hold it), ``check_call`` per call. Both see the
same calls and the same (normalised) schemas; the printed figures are ratios measured together.
A third row, a jsonschema validator built once per tool and reused (``iter_errors``), shows what
caching alone buys. toolmend does more per call than either (near-miss names, BFCL's
float-is-not-integer rule, empty values), so this is a lower bound on the work it saves.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from typing import Any

import jsonschema

from toolmend._shared import shared_dir
from toolmend.check import Checker
from toolmend.formats.tools import load_tools
from toolmend.schema import Tool, ToolCall


def _gold() -> list[tuple[list[Tool], ToolCall]]:
    """(tools, call) for every BFCL gold call: first acceptable value, omittable ones left out."""
    folder = shared_dir() / "data" / "bfcl"
    pairs = []
    for qfile in sorted(folder.glob("BFCL_v4_*.json")):
        afile = folder / "possible_answer" / qfile.name
        if not afile.exists():
            continue
        questions = [json.loads(line) for line in qfile.read_text().splitlines() if line.strip()]
        answers = [json.loads(line) for line in afile.read_text().splitlines() if line.strip()]
        for q, a in zip(questions, answers, strict=True):
            tools = load_tools(q["function"])
            for entry in a["ground_truth"]:
                ((name, params),) = entry.items()
                args = {k: _first(v) for k, v in params.items() if v and "" not in v}
                pairs.append((tools, ToolCall(name=name, arguments=args)))
    return pairs


def _first(values: list[Any]) -> Any:
    value = values[0]
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return {k: _first(v) for k, v in value.items() if v and "" not in v}
    return value


def _baseline(pairs: list[tuple[list[Tool], ToolCall]]) -> list[float]:
    times = []
    for tools, call in pairs:
        t0 = time.perf_counter()
        schema = next(t.parameters for t in tools if t.name == call.name)
        with contextlib.suppress(jsonschema.ValidationError):
            jsonschema.validate(call.arguments, schema)
        times.append(time.perf_counter() - t0)
    return times


def _cached_validator(
    pairs: list[tuple[list[Tool], ToolCall]], validators: dict[tuple[int, str], Any]
) -> list[float]:
    times = []
    for tools, call in pairs:
        t0 = time.perf_counter()
        validator = validators[(id(tools), call.name)]
        list(validator.iter_errors(call.arguments))
        times.append(time.perf_counter() - t0)
    return times


def _toolmend(pairs: list[tuple[list[Tool], ToolCall]], checkers: dict[int, Checker]) -> list[float]:
    times = []
    for tools, call in pairs:
        checker = checkers[id(tools)]
        t0 = time.perf_counter()
        checker.check_call(call)
        times.append(time.perf_counter() - t0)
    return times


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3, help="passes over all calls (best pass is kept)")
    args = parser.parse_args()
    pairs = _gold()
    checkers: dict[int, Checker] = {}
    t0 = time.perf_counter()
    for tools, _ in pairs:
        if id(tools) not in checkers:
            checkers[id(tools)] = Checker(tools)
            for t in tools:
                checkers[id(tools)].plan(t.name)
    compile_s = time.perf_counter() - t0
    n_tools = sum(len(c.tools) for c in checkers.values())
    validators = {
        (id(tools), t.name): jsonschema.Draft202012Validator(t.parameters)
        for tools, _ in pairs
        for t in tools
    }
    _toolmend(pairs, checkers)  # warm-up
    _cached_validator(pairs, validators)
    base = min((_baseline(pairs) for _ in range(args.repeat)), key=sum)
    cached = min((_cached_validator(pairs, validators) for _ in range(args.repeat)), key=sum)
    ours = min((_toolmend(pairs, checkers) for _ in range(args.repeat)), key=sum)
    print(
        f"BFCL gold calls: {len(pairs)}  (tool schemas compiled: {n_tools}, in {compile_s * 1e3:.1f} ms total)"
    )
    print(f"{'':<22}{'calls/s':>12}{'p50 µs':>10}{'p99 µs':>10}{'mean µs':>10}")
    rows = (("jsonschema.validate", base), ("cached jsonschema", cached), ("toolmend Checker", ours))
    for label, times in rows:
        print(
            f"{label:<22}{len(times) / sum(times):>12,.0f}{_pct(times, 0.5) * 1e6:>10.1f}"
            f"{_pct(times, 0.99) * 1e6:>10.1f}{statistics.mean(times) * 1e6:>10.1f}"
        )
    print(f"speed-up vs jsonschema.validate (throughput): {sum(base) / sum(ours):.1f}x")
    print(f"speed-up vs cached jsonschema validator: {sum(cached) / sum(ours):.1f}x")
    print(f"compile cost per tool: {compile_s / n_tools * 1e6:.0f} µs (paid once per tool)")


if __name__ == "__main__":
    main()

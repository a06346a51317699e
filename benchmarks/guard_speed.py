"""The guard's own cost per clean turn, against the checker alone, on every BFCL gold call.

    .venv/bin/python benchmarks/guard_speed.py [--repeat 5]

Both see the same turns (one BFCL gold call each, as a provider would send it: a name and a JSON
argument string) and the same tools, with one compiled checker per record reused across
repeats. "checker alone" is what a caller with parsed calls pays: ``json.loads`` of the argument
string plus ``Checker.check``. "guard" is ``Guard.decide`` on a :class:`~toolmend.guard.Turn`
built from the same string — reading the arguments, checking, deciding, and the
:class:`~toolmend.guard.Decision` it returns. Target (issue 9): at most 2x the checker alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_speed import _gold  # noqa: E402

from toolmend._schema import ToolCall  # noqa: E402
from toolmend.check import Checker  # noqa: E402
from toolmend.guard import Guard, Turn  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pairs = _gold()
    checkers: dict[int, Checker] = {}
    guards: dict[int, Guard] = {}
    cases = []
    for tools, call in pairs:
        key = id(tools)
        if key not in checkers:
            checkers[key] = Checker(tools)
            guards[key] = Guard(checkers[key])
        raw = json.dumps(call.model_dump(mode="json")["arguments"])
        cases.append((checkers[key], guards[key], call.name, raw))
    # warm-up: compile every plan once for both
    for checker, guard, name, raw in cases:
        checker.check([ToolCall(name=name, arguments=json.loads(raw))])
        guard.decide(Turn.from_native("", [{"id": "c0", "name": name, "arguments": raw}]))

    def run_checker() -> float:
        t0 = time.perf_counter()
        for checker, _, name, raw in cases:
            checker.check([ToolCall(name=name, arguments=json.loads(raw))])
        return time.perf_counter() - t0

    def run_guard() -> float:
        t0 = time.perf_counter()
        for _, guard, name, raw in cases:
            guard.decide(Turn.from_native("", [{"id": "c0", "name": name, "arguments": raw}]))
        return time.perf_counter() - t0

    clean = sum(
        guard.decide(Turn.from_native("", [{"id": "c0", "name": n, "arguments": r}])).action == "accept"
        for _, guard, n, r in cases
    )
    c_times, g_times = [], []
    for _ in range(args.repeat):
        c_times.append(run_checker())
        g_times.append(run_guard())
    c, g = statistics.median(c_times), statistics.median(g_times)
    n = len(cases)
    print(f"{n} BFCL gold calls ({clean} accepted as they are), median of {args.repeat} runs")
    print(f"{'':18} {'us/turn':>9} {'ratio':>7}")
    print(f"{'checker alone':18} {c / n * 1e6:9.1f} {1.0:7.2f}")
    print(f"{'guard.decide':18} {g / n * 1e6:9.1f} {g / c:7.2f}")


if __name__ == "__main__":
    main()

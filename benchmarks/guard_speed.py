"""The guard's own cost per clean turn, against the checker alone, on every BFCL gold call.

    .venv/bin/python benchmarks/guard_speed.py [--repeat 5]

Both see the same turns (one BFCL gold call each, as a provider would send it: a name and a JSON
argument string) and the same tools, with one compiled checker per record reused across
repeats. "checker alone" is what a caller with parsed calls pays: ``json.loads`` of the argument
string plus ``Checker.check``. "guard" is ``Guard.decide`` on a :class:`~toolmend.guard.Turn`
built from the same string — reading the arguments, checking, deciding, and the
:class:`~toolmend.guard.Decision` it returns. Target (issue 9): at most 2x the checker alone.

``--ground`` times a third row: the guard with ``GuardPolicy(ground=True)`` given the BFCL
question as the conversation, so each clean turn also pays the grounding check (the question's
text read and every copied-looking string value looked up in it). It also counts what the check
re-asks: right gold calls (false alarms), and gold calls with one string value swapped for the
same parameter's value in another BFCL question (a wrong value the schema passes; caught ones).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_speed import _gold_turns  # noqa: E402

from toolmend._schema import ToolCall  # noqa: E402
from toolmend.check import Checker  # noqa: E402
from toolmend.guard import Guard, GuardPolicy, Turn  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ground", action="store_true", help="also time the guard with its grounding check")
    args = parser.parse_args()
    checkers: dict[int, Checker] = {}
    guards: dict[int, Guard] = {}
    grounded: dict[int, Guard] = {}
    cases = []
    contexts = []
    for tools, call, messages in _gold_turns():
        key = id(tools)
        if key not in checkers:
            checkers[key] = Checker(tools)
            guards[key] = Guard(checkers[key])
            grounded[key] = Guard(checkers[key], GuardPolicy(ground=True))
        raw = json.dumps(call.model_dump(mode="json")["arguments"])
        cases.append((checkers[key], guards[key], call.name, raw))
        contexts.append((grounded[key], messages))
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

    def run_grounded() -> float:
        t0 = time.perf_counter()
        for (_, _, name, raw), (guard, messages) in zip(cases, contexts, strict=True):
            _grounded(guard, name, raw, messages)
        return time.perf_counter() - t0

    clean = sum(
        guard.decide(Turn.from_native("", [{"id": "c0", "name": n, "arguments": r}])).action == "accept"
        for _, guard, n, r in cases
    )
    c_times, g_times, r_times = [], [], []
    for _ in range(args.repeat):
        c_times.append(run_checker())
        g_times.append(run_guard())
        if args.ground:
            r_times.append(run_grounded())
    c, g = statistics.median(c_times), statistics.median(g_times)
    n = len(cases)
    print(f"{n} BFCL gold calls ({clean} accepted as they are), median of {args.repeat} runs")
    print(f"{'':18} {'us/turn':>9} {'ratio':>7}")
    print(f"{'checker alone':18} {c / n * 1e6:9.1f} {1.0:7.2f}")
    print(f"{'guard.decide':18} {g / n * 1e6:9.1f} {g / c:7.2f}")
    if args.ground:
        r = statistics.median(r_times)
        reasked = sum(
            _grounded(guard, name, raw, m) == "reask"
            for (_, _, name, raw), (guard, m) in zip(cases, contexts, strict=True)
        )
        print(
            f"{'guard, ground':18} {r / n * 1e6:9.1f} {r / c:7.2f}   ({reasked} gold calls re-asked as ungrounded)"
        )
        wrong = _swapped(cases, contexts)
        caught = sum(
            _grounded(guard, name, json.dumps(args_), m) == "reask" for guard, name, args_, m in wrong
        )
        print(f"wrong values (one string swapped for another question's): {caught} of {len(wrong)} re-asked")


def _grounded(guard: Guard, name: str, raw: str, messages: Any) -> str:
    """The grounding guard's action on one call, as a run of its own: a re-ask must not spend the
    next turn's budget."""
    guard.reset()
    return guard.decide(
        Turn.from_native("", [{"id": "c0", "name": name, "arguments": raw}]), context=messages
    ).action


def _swapped(cases: list[Any], contexts: list[Any]) -> list[tuple[Guard, str, dict[str, Any], Any]]:
    """Each gold call with its first string argument replaced by the next other value that the
    same parameter name takes in another question (deterministic: the order of the BFCL files)."""
    values: dict[str, list[tuple[int, str]]] = {}
    for i, (_, _, _, raw) in enumerate(cases):
        for key, value in json.loads(raw).items():
            if isinstance(value, str):
                values.setdefault(key, []).append((i, value))
    out = []
    for i, ((_, _, name, raw), (guard, messages)) in enumerate(zip(cases, contexts, strict=True)):
        args = json.loads(raw)
        for key, value in args.items():
            if not isinstance(value, str):
                continue
            pool = values[key]
            at = next(k for k, (j, _) in enumerate(pool) if j == i)
            donor = next(
                (v for j, v in pool[at + 1 :] + pool[:at] if j != i and v.casefold() != value.casefold()),
                None,
            )
            if donor is not None:
                out.append((guard, name, {**args, key: donor}, messages))
            break
    return out


if __name__ == "__main__":
    main()

"""Speed of the checker on every BFCL gold call, side by side with the fastest validators, in one run.

    .venv/bin/python benchmarks/check_speed.py [--repeat 7] [--warmup 8] [--gc] [--hot N]

Every row sees the same calls and the same (normalised) schemas, in one process:

- ``jsonschema-rs``: the Rust validator, compiled once per tool, ``is_valid`` per call;
- ``fastjsonschema``: generated Python, compiled once per tool, called per call;
- ``jsonschema (cached)``: a ``Draft202012Validator`` built once per tool, ``is_valid`` per call;
- ``jsonschema.validate``: what simple wrappers do, rebuilding the validator on every call;
- ``toolmend check_call``: one ``Checker`` per record (compiled up front, as a guard holds it),
  ``check_call(call)`` per call, which reads the name and arguments from the ``ToolCall``;
- ``toolmend check_arguments``: the same checkers, ``check_arguments(name, arguments)`` per
  call, given what the peers are given. Both take the generated fast path on a clean call.

Each timer covers the same work for every row: find the tool's validator by name among the
record's tools, and validate the arguments. The gold calls are clean, so these are clean-call figures; toolmend also checks
more per call than the peers (closed objects, empty values, BFCL's float-is-not-integer rule).
By default each call is timed once per pass, as a stream of calls to ever other tools meets
the validators (caches cold); ``--hot N`` times each call N times back to back instead (caches
warm: one call re-checked in a loop; the rebuild-per-call row stays at one). Per call, the
median over the passes is kept. Ratios are against the fastest peer measured in
the same run (theirs / ours: above 1 means toolmend is faster).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from typing import Any

import fastjsonschema
import jsonschema
import jsonschema_rs

from toolmend._schema import Tool, ToolCall
from toolmend._shared import shared_dir
from toolmend.check import Checker
from toolmend.formats._tools import load_tools


def _gold() -> list[tuple[list[Tool], ToolCall]]:
    """(tools, call) for every BFCL gold call: first acceptable value, omittable ones left out."""
    return [(tools, call) for tools, call, _ in _gold_turns()]


def _gold_turns() -> list[tuple[list[Tool], ToolCall, list[dict[str, Any]]]]:
    """(tools, call, the question's messages) for every BFCL gold call."""
    folder = shared_dir() / "data" / "bfcl"
    out = []
    for qfile in sorted(folder.glob("BFCL_v4_*.json")):
        afile = folder / "possible_answer" / qfile.name
        if not afile.exists():
            continue
        questions = [json.loads(line) for line in qfile.read_text().splitlines() if line.strip()]
        answers = [json.loads(line) for line in afile.read_text().splitlines() if line.strip()]
        for q, a in zip(questions, answers, strict=True):
            tools = load_tools(q["function"])
            messages = [m for turn in q["question"] for m in turn]
            for entry in a["ground_truth"]:
                ((name, params),) = entry.items()
                args = {k: _first(v) for k, v in params.items() if v and "" not in v}
                out.append((tools, ToolCall(name=name, arguments=args), messages))
    return out


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
        try:  # noqa: SIM105 - contextlib.suppress would add its own cost to the timed call
            jsonschema.validate(call.arguments, schema)
        except jsonschema.ValidationError:
            pass
        times.append(time.perf_counter() - t0)
    return times


Validators = dict[int, dict[str, Any]]
CALL = "toolmend check_call"
ARGUMENTS = "toolmend check_arguments"


def _compiled(pairs: list[tuple[list[Tool], ToolCall]], tests: Validators, hot: int = 1) -> list[float]:
    """Time ``tests[record][name](arguments)`` per call, as toolmend's row times
    ``checkers[record].check_call(call)``: the record's validators are found outside the timer
    (as its Checker is), the tool's by name inside it (as check_call does). Name and arguments
    are read from the call outside the timer: a peer gets them in the cheapest form.

    A bare ``try`` catches fastjsonschema's "invalid" and costs nothing until something is
    raised; ``with contextlib.suppress(...)`` would add a context manager (hundreds of ns, more
    than jsonschema-rs's own time) to every timed peer call and none to toolmend's."""
    times = []
    for tools, call in pairs:
        validators = tests[id(tools)]
        name, args = call.name, call.arguments
        if hot > 1:
            t0 = time.perf_counter()
            for _ in range(hot):
                try:  # noqa: SIM105 - see the docstring
                    validators[name](args)
                except fastjsonschema.JsonSchemaException:
                    pass
            times.append((time.perf_counter() - t0) / hot)
            continue
        t0 = time.perf_counter()
        try:  # noqa: SIM105 - see the docstring
            validators[name](args)
        except fastjsonschema.JsonSchemaException:
            pass
        times.append(time.perf_counter() - t0)
    return times


def _compile_peers(pairs: list[tuple[list[Tool], ToolCall]]) -> dict[str, Validators]:
    tools_by_id = {id(tools): tools for tools, _ in pairs}
    peers: dict[str, Validators] = {"jsonschema-rs": {}, "fastjsonschema": {}, "jsonschema (cached)": {}}
    for key, tools in tools_by_id.items():
        for label in peers:
            peers[label][key] = {}
        for t in tools:
            peers["jsonschema-rs"][key][t.name] = jsonschema_rs.validator_for(t.parameters).is_valid
            # use_default=False: by default fastjsonschema writes defaults into the arguments it
            # checks, which would change the calls every later row sees.
            peers["fastjsonschema"][key][t.name] = fastjsonschema.compile(t.parameters, use_default=False)
            peers["jsonschema (cached)"][key][t.name] = jsonschema.Draft202012Validator(t.parameters).is_valid
    return peers


def _toolmend(
    pairs: list[tuple[list[Tool], ToolCall]], checkers: dict[int, Checker], hot: int = 1
) -> list[float]:
    """``checker.check_call(call)``: the record's checker found outside the timer (as a peer's
    validators are), the method and the tool's test inside it."""
    times = []
    for tools, call in pairs:
        checker = checkers[id(tools)]
        # The same reads as the peers' rows make before their timer (results unused here), so
        # that every row starts from a call its caller has just touched, as after parsing.
        call.name, call.arguments  # noqa: B018
        if hot > 1:
            t0 = time.perf_counter()
            for _ in range(hot):
                checker.check_call(call)
            times.append((time.perf_counter() - t0) / hot)
            continue
        t0 = time.perf_counter()
        checker.check_call(call)
        times.append(time.perf_counter() - t0)
    return times


def _toolmend_arguments(
    pairs: list[tuple[list[Tool], ToolCall]], checkers: dict[int, Checker], hot: int = 1
) -> list[float]:
    """``checker.check_arguments(name, arguments)``: given what the peers are given, timed as
    they are (the record's checker found outside the timer, the tool's test by name inside)."""
    times = []
    for tools, call in pairs:
        checker = checkers[id(tools)]
        name, args = call.name, call.arguments
        if hot > 1:
            t0 = time.perf_counter()
            for _ in range(hot):
                checker.check_arguments(name, args)
            times.append((time.perf_counter() - t0) / hot)
            continue
        t0 = time.perf_counter()
        checker.check_arguments(name, args)
        times.append(time.perf_counter() - t0)
    return times


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--repeat", type=int, default=7, help="passes over all calls (each call's median is kept)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=8,
        help="untimed passes first (8: every generated function is past CPython's specialisation warm-up)",
    )
    parser.add_argument(
        "--hot",
        type=int,
        default=1,
        metavar="N",
        help="time each call N times back to back (mean kept): caches warm, as when one call is "
        "re-checked in a loop; 1 (the default): each call once per pass, caches cold",
    )
    parser.add_argument(
        "--gc",
        action="store_true",
        help="leave the garbage collector on while timing (loaded data frozen first)",
    )
    args = parser.parse_args()
    gold = _gold()
    checkers: dict[int, Checker] = {}
    t0 = time.perf_counter()
    for tools, _ in gold:
        if id(tools) not in checkers:
            checkers[id(tools)] = Checker(tools)
            checkers[id(tools)].verify()
    compile_s = time.perf_counter() - t0
    # The goal is about clean calls; the few gold answers this first-value reading turns into
    # bad calls (a nested value left as its list of alternatives) are left out.
    pairs = [(tools, call) for tools, call in gold if not checkers[id(tools)].check_call(call)]
    n_tools = sum(len(c.tools) for c in checkers.values())
    peers = _compile_peers(pairs)
    # As timeit does, the collector is off while timing, for every row alike: a collection of
    # the big heap of loaded data would land on whichever row and call happens to allocate the
    # triggering object. With --gc it stays on, the loaded data frozen out of its reach.
    gc.collect()
    if args.gc:
        gc.freeze()
    else:
        gc.disable()
    hot = args.hot
    runners: dict[str, Any] = {
        label: (lambda t=tests: _compiled(pairs, t, hot)) for label, tests in peers.items()
    }
    runners[CALL] = lambda: _toolmend(pairs, checkers, hot)
    runners[ARGUMENTS] = lambda: _toolmend_arguments(pairs, checkers, hot)
    # Warm-up: CPython (3.11+) specialises a Python function's bytecode from its 8th call on, and
    # the Python rows (fastjsonschema's and toolmend's generated code) run one function per tool,
    # most tools once per pass: without these passes their early timed passes would measure
    # code not yet specialised, which a long-running caller (a guard) leaves behind at once.
    for _ in range(args.warmup):
        for run in runners.values():
            run()
    # Round robin, in a new random order each pass: a busy machine slows whichever row runs
    # while it is busy, so every row gets passes spread over the same stretch of time, and no
    # row always follows the same one (a rotation would keep the neighbours). Before each pass
    # the heap is collected: jsonschema leaves garbage behind that would cool the next row.
    # Each call's time is its median over the passes: a pause of the machine (this one is
    # shared) lands on one pass of one row, while a call that is slow is slow in every pass.
    passes: dict[str, list[list[float]]] = {label: [] for label in runners}
    shuffle = random.Random(0).shuffle
    for _ in range(args.repeat):
        order = list(runners)
        shuffle(order)
        for label in order:
            gc.collect()
            passes[label].append(runners[label]())
    best = {label: [statistics.median(t) for t in zip(*runs, strict=True)] for label, runs in passes.items()}
    # The rebuild-per-call row, a thousand times slower, is timed once, after the others: in the
    # round robin its heap of short-lived validators (with the collector off, never collected)
    # would have cooled every row timed after it.
    best["jsonschema.validate"] = _baseline(pairs)
    gc.enable()
    gc.unfreeze()
    ours = {label: best.pop(label) for label in (CALL, ARGUMENTS)}
    rows = [*best.items(), *ours.items()]
    print(
        f"BFCL gold calls: {len(pairs)} clean ({len(gold) - len(pairs)} left out as not clean); "
        f"tool schemas: {n_tools}, compiled by toolmend in {compile_s:.2f} s"
    )
    print(f"{'':<28}{'calls/s':>12}{'p50 µs':>10}{'p99 µs':>10}{'mean µs':>10}")
    for label, times in rows:
        print(
            f"{label:<28}{len(times) / sum(times):>12,.0f}{_pct(times, 0.5) * 1e6:>10.1f}"
            f"{_pct(times, 0.99) * 1e6:>10.1f}{statistics.mean(times) * 1e6:>10.1f}"
        )
    fastest_label, fastest = min(best.items(), key=lambda row: sum(row[1]))
    print(f"vs the fastest peer, {fastest_label} (theirs / ours: above 1 is toolmend faster):")
    for label, times in ours.items():
        print(
            f"  {label:<26} throughput {sum(fastest) / sum(times):.2f}x, "
            f"p50 {_pct(fastest, 0.5) / _pct(times, 0.5):.2f}x, p99 {_pct(fastest, 0.99) / _pct(times, 0.99):.2f}x"
        )


if __name__ == "__main__":
    main()

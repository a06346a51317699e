"""Per-call overhead of ``toolmend bench world``'s agent loop, against cheaper ways to run a call.

Every gold call of ``generate_tasks(seed=0)`` is executed, one reply per dependency level as the
scripted agent sends them, five ways, and the per-call time's median and 90th percentile are
printed with their ratio to the fastest way measured in the same run (CPU time of the thread by
default, since the development machine is shared):

- ``direct``: the tool's Python function called with validated arguments (what TRL's own tool
  loop does: ``tool(**arguments)``), the floor;
- ``env, no checker``: :class:`~toolmend.env.Environment` with the JSON-Schema gate only;
- ``env + checker``: the environment as the benchmark runs it (checklist in front);
- ``episode step``: :meth:`Episode.observe` — parse the reply, fault schedule, environment,
  step record and history messages — i.e. the whole per-call cost of the benchmark's loop;
- ``episode step, heavy faults``: the same with the heavy fault schedule.

World creation (once per episode) and grading (once per episode) are reported apart.

    .venv/bin/python benchmarks/world_steps.py [--repeat 5] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable

from toolmend._schema import ToolCall
from toolmend.check import check
from toolmend.env._environment import Environment
from toolmend.world import WORLD_TOOLS, World, generate_tasks
from toolmend.world._episode import Episode, gold_replies
from toolmend.world._grading import GoldRun, gold_run
from toolmend.world._schedule import FaultSchedule
from toolmend.world._tasks import Task

Timer = Callable[[Task, GoldRun], list[float]]
CLOCK: Callable[[], float] = time.thread_time
"""CPU time of this thread by default: on a shared machine wall time also counts the time the
process waited for a core (``--clock wall`` measures that instead)."""


def _direct(task: Task, gold: GoldRun) -> list[float]:
    world = World.create(task.seed)
    context = {"state": world.state}
    out = []
    for call in gold.calls:
        tool = WORLD_TOOLS.get(call.name)
        assert tool is not None
        start = CLOCK()
        with contextlib.suppress(Exception):  # a domain failure is an answer too
            tool.invoke(call.arguments, context)
        out.append(CLOCK() - start)
    return out


def _env(checker: bool) -> Timer:
    def run(task: Task, gold: GoldRun) -> list[float]:
        world = World.create(task.seed)
        env = Environment(WORLD_TOOLS, context={"state": world.state}, checker=check if checker else None)
        out = []
        for call in gold.calls:
            start = CLOCK()
            env.execute(ToolCall(name=call.name, arguments=call.arguments))
            out.append(CLOCK() - start)
        return out

    return run


def _episode(profile: str) -> Timer:
    schedule = FaultSchedule.named(profile)

    def run(task: Task, gold: GoldRun) -> list[float]:
        episode = Episode(task, schedule.for_task(task))
        out = []
        for reply in gold_replies(gold)[:-1]:
            before = len(episode.steps)
            start = CLOCK()
            episode.observe(reply)
            elapsed = CLOCK() - start
            calls = len(episode.steps) - before
            out.extend([elapsed / calls] * calls)
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="passes over every task (default 5)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="what to time (default cpu)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    tasks = generate_tasks(seed=0)
    golds = [gold_run(t) for t in tasks]
    ways: dict[str, Timer] = {
        "direct (tool function)": _direct,
        "env, no checker": _env(checker=False),
        "env + checker": _env(checker=True),
        "episode step": _episode("none"),
        "episode step, heavy faults": _episode("heavy"),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, way in ways.items():  # interleaved, so drift hits every way alike
            for task, gold in zip(tasks, golds, strict=True):
                times[name].extend(way(task, gold))
    start = CLOCK()
    for task in tasks:
        World.create(task.seed)
    create = (CLOCK() - start) / len(tasks)
    start = CLOCK()
    for task, gold in zip(tasks, golds, strict=True):
        episode = Episode(task, [])
        for reply in gold_replies(gold):
            episode.observe(reply)
        episode.grade(gold)
    whole = (CLOCK() - start) / len(tasks)
    p50 = {name: statistics.median(v) for name, v in times.items()}
    floor = min(p50.values())
    n = len(next(iter(times.values())))
    print(
        f"{len(tasks)} tasks, {n // args.repeat} gold calls, {args.repeat} passes ({n} timed calls per way), "
        f"{args.clock} time"
    )
    print(f"{'way':28} {'p50 µs':>8} {'p90 µs':>8} {'p50 ratio':>10}")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:28} {p50[name] * 1e6:8.1f} {p90 * 1e6:8.1f} {p50[name] / floor:9.2f}x")
    print(
        f"per episode: world creation {create * 1e3:.2f} ms; whole gold episode incl. grading {whole * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()

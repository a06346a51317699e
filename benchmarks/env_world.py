"""Cost of the environment's layers on the built-in world's gold trajectories.

Runs every gold call of ``generate_tasks(seed=0)`` three ways and prints per-call times as ratios
against plain execution (schema gate only, no checklist, no cache) measured in the same run:

    .venv/bin/python benchmarks/env_world.py
"""

from __future__ import annotations

import time
from typing import Any

from toolmend.env import ToolCache
from toolmend.world import Task, World, generate_tasks


def _run(tasks: list[Task], **kwargs: Any) -> tuple[float, int]:
    calls = 0
    start = time.perf_counter()
    for task in tasks:
        env = World.create(task.seed).environment(**kwargs)
        env.run(task.calls)
        calls += len(task.calls)
    return time.perf_counter() - start, calls


def main() -> None:
    tasks = generate_tasks(seed=0)
    base, n = _run(tasks, checker=None)
    checked, _ = _run(tasks)
    cache = ToolCache()
    _run(tasks, checker=None, cache=cache)
    warm, _ = _run(tasks, checker=None, cache=cache)
    world_only = time.perf_counter()
    for task in tasks:
        World.create(task.seed)
    world_only = time.perf_counter() - world_only
    print(f"{len(tasks)} tasks, {n} gold calls")
    print(f"world creation alone            : {world_only / base:.2f} x plain run")
    print(f"plain (schema gate)             : 1.00 x  ({base / n * 1e3:.2f} ms/call incl. world creation)")
    print(f"with the checklist              : {checked / base:.2f} x")
    print(f"second pass over a shared cache : {warm / base:.2f} x  ({cache.hits} hits)")


if __name__ == "__main__":
    main()

"""``toolmend bench world``: the agentic benchmark over the executable world (multi-turn tasks,
scheduled faults, state-based grading, pass^k, per-fault recovery).

>>> from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
>>> load_builtin_benchmarks("world")
>>> bench = BENCHMARKS.get("world")()
>>> sample = bench.load(faults="none")[0]
>>> bench.score(sample, bench.gold(sample)).values["success"]
1.0
"""

from toolmend.benchmarks.world._benchmark import WorldBenchmark, read_tasks

__all__ = [
    "WorldBenchmark",
    "read_tasks",
]

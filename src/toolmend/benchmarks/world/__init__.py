"""``toolmend bench world``: the agentic benchmark over the executable world (multi-turn tasks,
scheduled faults, state-based grading, pass^k, per-fault recovery).

>>> from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
>>> load_builtin_benchmarks("world")
>>> bench = BENCHMARKS.get("world")()
>>> sample = bench.load(faults="none")[0]
>>> bench.score(sample, bench.gold(sample)).values["success"]
1.0
"""

from toolmend.benchmarks.world._audit import AuditReport, audit_tasks
from toolmend.benchmarks.world._benchmark import WorldBenchmark, build_tasks_file, read_tasks
from toolmend.benchmarks.world._metrics import aggregate_world, mean_ci, pass_at_k, pass_hat_k

__all__ = [
    "AuditReport",
    "WorldBenchmark",
    "aggregate_world",
    "audit_tasks",
    "build_tasks_file",
    "mean_ci",
    "pass_at_k",
    "pass_hat_k",
    "read_tasks",
]

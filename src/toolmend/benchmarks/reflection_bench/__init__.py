"""Tool-Reflection-Bench: loader, official correctness / Repair@N, and the structured-reflection reward.

>>> from toolmend.benchmarks.reflection_bench._reward import reward_fn
>>> gold = '<reflect>fix</reflect><tool_call>{"name": "f", "arguments": {}}</tool_call>'
>>> reward_fn([gold], ground_truth=[gold])
[1.0]
"""

from toolmend.benchmarks.reflection_bench._benchmark import ReflectionBench
from toolmend.benchmarks.reflection_bench._loader import load_reflection_bench

__all__ = [
    "ReflectionBench",
    "load_reflection_bench",
]

"""Tool-Reflection-Bench: loader, official correctness / Repair@N, and the structured-reflection reward.

>>> from toolmend.benchmarks.reflection_bench import reflection_reward, reward_fn
>>> gold = '<reflect>fix</reflect><tool_call>{"name": "f", "arguments": {}}</tool_call>'
>>> reward_fn([gold], ground_truth=[gold])
[1.0]
"""

from toolmend.benchmarks.reflection_bench._benchmark import ReflectionBench
from toolmend.benchmarks.reflection_bench._loader import (
    load_reflection_bench,
    parse_record,
    tools_from_system_prompt,
)
from toolmend.benchmarks.reflection_bench._reward import (
    RewardBreakdown,
    RewardConfig,
    Similarity,
    equal_calls,
    lexical_similarity,
    make_reward_fn,
    reflection_reward,
    reward_breakdown,
    reward_fn,
)
from toolmend.benchmarks.reflection_bench._scoring import AttemptScore, canonical, repair_at_n, score_attempt
from toolmend.benchmarks.reflection_bench._tags import ReplyParts, official_calls, released_calls, split_reply

__all__ = [
    "AttemptScore",
    "ReflectionBench",
    "ReplyParts",
    "RewardBreakdown",
    "RewardConfig",
    "Similarity",
    "canonical",
    "equal_calls",
    "lexical_similarity",
    "load_reflection_bench",
    "make_reward_fn",
    "official_calls",
    "parse_record",
    "reflection_reward",
    "released_calls",
    "repair_at_n",
    "reward_breakdown",
    "reward_fn",
    "score_attempt",
    "split_reply",
    "tools_from_system_prompt",
]

"""Critique suites in CriticTool's format, built from gold trajectories (world, NesTools, BFCL).

>>> from toolmend.benchmarks.critic import build_suite
>>> info = build_suite("world", seed=0, out=tmp_path, limit=8)
>>> sorted(info.internal)
['error_free', ...]

The files load with :func:`toolmend.benchmarks.critictool.load_critictool` and score with the
CriticTool scorer unchanged. ``toolmend bench critic`` (:data:`~toolmend.benchmarks.SUITES`)
builds the world suite, runs a model on it and scores it in one go.
"""

from toolmend.benchmarks.critic.build import INTERNAL_OPERATORS, SuiteInfo, build_suite, finish_message
from toolmend.benchmarks.critic.record import (
    SYSTEM_TEMPLATE,
    action_args,
    action_text,
    system_prompt,
    tool_entry,
)
from toolmend.benchmarks.critic.traces import Source, Trace, load_traces

__all__ = [
    "INTERNAL_OPERATORS",
    "SYSTEM_TEMPLATE",
    "Source",
    "SuiteInfo",
    "Trace",
    "action_args",
    "action_text",
    "build_suite",
    "finish_message",
    "load_traces",
    "system_prompt",
    "tool_entry",
]

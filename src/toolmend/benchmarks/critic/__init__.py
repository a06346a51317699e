"""Critique suites in CriticTool's format, built from gold trajectories (world, NesTools, BFCL).

>>> from toolmend.benchmarks.critic import build_suite
>>> info = build_suite("world", seed=0, out=tmp_path, limit=8)
>>> sorted(info.internal)
['error_free', ...]

The files load with :func:`toolmend.benchmarks.critictool.load_critictool` and score with the
CriticTool scorer unchanged. ``toolmend bench critic`` (:data:`~toolmend.benchmarks.SUITES`)
builds the world suite, runs a model on it and scores it in one go.
``build_suite(..., variant="evolved")`` applies CriticTool's SRM evolution (:mod:`.evolve`);
every sample passes the label checks of :mod:`.verify`; :func:`suite_quality` reports counts,
drops, duplicates and contamination (:mod:`.quality`).
"""

from toolmend.benchmarks.critic.build import (
    INTERNAL_OPERATORS,
    VARIANTS,
    SuiteInfo,
    build_suite,
    finish_message,
)
from toolmend.benchmarks.critic.evolve import EVOLUTIONS, PLANS
from toolmend.benchmarks.critic.quality import QualityReport, suite_quality
from toolmend.benchmarks.critic.record import (
    SYSTEM_TEMPLATE,
    action_args,
    action_text,
    system_prompt,
    tool_entry,
)
from toolmend.benchmarks.critic.traces import Source, Trace, load_traces
from toolmend.benchmarks.critic.verify import CHECKS, check_sample

__all__ = [
    "CHECKS",
    "EVOLUTIONS",
    "INTERNAL_OPERATORS",
    "PLANS",
    "QualityReport",
    "SYSTEM_TEMPLATE",
    "Source",
    "SuiteInfo",
    "Trace",
    "VARIANTS",
    "action_args",
    "action_text",
    "build_suite",
    "check_sample",
    "finish_message",
    "load_traces",
    "suite_quality",
    "system_prompt",
    "tool_entry",
]

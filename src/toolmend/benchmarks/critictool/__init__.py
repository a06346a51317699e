"""CriticTool: does a model notice, name and recover from tool-call errors?

- :mod:`.records` reads the official files into :class:`~toolmend.Sample` objects;
- :mod:`.prompts` holds the mode instructions (replaceable) and builds the prompt;
- :mod:`toolmend.formats.critictool` reads replies as the official ``format_load`` does;
- :mod:`.runner` runs a model, including the interactive external-error retry loop;
- :mod:`.checklist` is the rule-based checklist critic (model ``checklist``);
- :mod:`.scoring` computes the official per-sample metrics; :mod:`.overall` aggregates them.

>>> from toolmend.benchmarks import BENCHMARKS
>>> BENCHMARKS.get("critictool").__name__
'CriticToolBenchmark'
"""

from toolmend.benchmarks.critictool.benchmark import CriticToolBenchmark
from toolmend.benchmarks.critictool.checklist import ChecklistCritic, critique
from toolmend.benchmarks.critictool.overall import WEIGHTS, aggregate_scores, overall_score
from toolmend.benchmarks.critictool.prompts import ANCHOR, Instructions, build_prompt, insert_instruction
from toolmend.benchmarks.critictool.records import data_file, load_critictool, load_critictool_file
from toolmend.benchmarks.critictool.runner import run_external, run_sample
from toolmend.benchmarks.critictool.scoring import (
    CachedSimilarity,
    SimilarityFn,
    arg_score,
    finish_reference,
    gold_actions,
    gold_prediction,
    score_sample,
)
from toolmend.formats.critictool import (
    CATEGORIES,
    FINISH,
    ParsedAction,
    parse_action,
    parse_tool_list,
    prompt_tools,
)

__all__ = [
    "ANCHOR",
    "CATEGORIES",
    "FINISH",
    "WEIGHTS",
    "CachedSimilarity",
    "ChecklistCritic",
    "CriticToolBenchmark",
    "Instructions",
    "ParsedAction",
    "SimilarityFn",
    "aggregate_scores",
    "arg_score",
    "build_prompt",
    "critique",
    "data_file",
    "finish_reference",
    "gold_actions",
    "gold_prediction",
    "insert_instruction",
    "load_critictool",
    "load_critictool_file",
    "overall_score",
    "parse_action",
    "parse_tool_list",
    "prompt_tools",
    "run_external",
    "run_sample",
    "score_sample",
]

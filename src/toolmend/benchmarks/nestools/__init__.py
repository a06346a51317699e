"""NesTools: nested tool-call chains (loader, prompt with candidate tools, official scorer).

>>> from toolmend.benchmarks.nestools import NesTools
>>> NesTools.name
'nestools'
"""

from toolmend.benchmarks.nestools._benchmark import NesTools, micro_metrics
from toolmend.benchmarks.nestools._data import gold_chain, load_nestools, official_depth, to_official_output
from toolmend.benchmarks.nestools._metric import (
    COUNT_KEYS,
    count_compat,
    count_improved,
    official_format_ok,
    parse_output,
)
from toolmend.benchmarks.nestools._prompt import (
    DEFAULT_TEMPLATE,
    TextEncoder,
    build_candidates,
    candidate_tools,
    load_template,
    render_prompt,
    render_tool,
)
from toolmend.benchmarks.nestools._values import check_score, normalize_date, safe_check_score

__all__ = [
    "COUNT_KEYS",
    "DEFAULT_TEMPLATE",
    "NesTools",
    "TextEncoder",
    "build_candidates",
    "candidate_tools",
    "check_score",
    "count_compat",
    "count_improved",
    "gold_chain",
    "load_nestools",
    "load_template",
    "micro_metrics",
    "normalize_date",
    "official_depth",
    "official_format_ok",
    "parse_output",
    "render_prompt",
    "render_tool",
    "safe_check_score",
    "to_official_output",
]

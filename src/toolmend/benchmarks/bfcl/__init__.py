"""BFCL (Berkeley Function Calling Leaderboard) single-turn scoring, BFCL-compatible and improved.

- :mod:`~toolmend.benchmarks.bfcl._data` — question + possible-answer files → samples;
- :mod:`~toolmend.benchmarks.bfcl._decode` — raw replies (Python call lists, FC-mode JSON) → calls;
- :mod:`~toolmend.benchmarks.bfcl._checker` — BFCL's AST checker with its ``error_type`` labels;
- :mod:`~toolmend.benchmarks.bfcl._benchmark` — the :class:`BFCLBenchmark` registered as ``"bfcl"``.

>>> from toolmend.benchmarks import BENCHMARKS
>>> import toolmend.benchmarks.bfcl
>>> "bfcl" in BENCHMARKS
True
"""

from toolmend.benchmarks.bfcl._benchmark import DEFAULT_SYSTEM_PROMPT, BFCLBenchmark, bfcl_function_doc
from toolmend.benchmarks.bfcl._checker import (
    CheckResult,
    ast_check,
    bfcl_type,
    multiple_check,
    parallel_check,
    simple_check,
)
from toolmend.benchmarks.bfcl._data import (
    AST_CATEGORIES,
    RELEVANCE_CATEGORIES,
    SUPPORTED_CATEGORIES,
    category_of,
    load_bfcl,
    target_from_answers,
)
from toolmend.benchmarks.bfcl._decode import (
    DecodeResult,
    Outcome,
    classify_output,
    decode,
    decode_fc,
    decode_python,
    is_call_list,
    is_empty_output,
    render_fc,
    render_openai,
    render_python,
)

__all__ = [
    "AST_CATEGORIES",
    "DEFAULT_SYSTEM_PROMPT",
    "RELEVANCE_CATEGORIES",
    "SUPPORTED_CATEGORIES",
    "BFCLBenchmark",
    "CheckResult",
    "DecodeResult",
    "Outcome",
    "ast_check",
    "bfcl_function_doc",
    "bfcl_type",
    "category_of",
    "classify_output",
    "decode",
    "decode_fc",
    "decode_python",
    "is_call_list",
    "is_empty_output",
    "load_bfcl",
    "multiple_check",
    "parallel_check",
    "render_fc",
    "render_openai",
    "render_python",
    "simple_check",
    "target_from_answers",
]
